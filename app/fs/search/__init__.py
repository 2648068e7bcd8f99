"""Search: `search_files` (names, by glob) and `search_text` (a literal or an RE2 pattern in
file contents). `text.py` holds both entry points and their results; `searcher.py` reads each
candidate file once within the call's budgets; `finders.py` finds a literal (SIMD scans),
`regex.py` runs RE2 line by line, with the literal every match holds (`required.py`) as its
prefilter and a bound on counted repetitions (`expansion.py`) checked before it compiles."""

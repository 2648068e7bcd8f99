"""Search: `search_files` (names by glob, `files.py`) and `search_text` (a literal or an RE2
pattern in file contents, `text.py`), in ripgrep's shape. A call's arguments and limits become
one options object, checked as it is built (`options.py`); the query becomes one `Matcher`
(`matcher.py`, the interface: a prefilter and the matching lines), a literal (`literal.py`, on
the SIMD finders of `finders.py`) or a regex (`regex.py`: RE2 line by line, prefiltered by the
literal every match holds, `required.py`, and refused when its counted repetitions written out
are too large, `expansion.py`; ripgrep's Unicode classes of words, digits, spaces and word
boundaries written out for RE2, `unicode.py`); what every match holds, and `Narrow`, the hook
an index narrows a call's files by (`needs.py`); one searcher (`searcher.py`) walks the tree
(`walk.py`, pruned by `app.fs.filters`), reads each candidate file once within the call's
budgets and knows the query only through that interface; what it finds and spends goes to one
sink (`sink.py`), from which the page is built (`results.py`; line previews and context in
`lines.py`), and where a page stopped, signed, and where the next resumes (`cursor.py`)."""

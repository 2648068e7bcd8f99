"""Filters: which names a walk keeps. Globs (`glob.py`: the pattern language of `search_files`,
`file_glob` and `exclude`, matched in time linear in the name: `syntax.py` its validation,
tokens and reference regex, `linear.py` the backtracking-free matcher) and ignore files
(`ignore.py`: `.gitignore`, `.ignore` and `.rgignore`, read as ripgrep reads them, with their
rules compiled to RE2 sets). Noise control, never security: denied names are pruned by the walk
before a filter sees them. Filters know nothing of search; search uses them."""

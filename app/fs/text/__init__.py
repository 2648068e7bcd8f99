"""Text: bytes on disk to text, and text to pages. Encoding detection, forward line windows and
reads within a byte budget (`textio.py`), the last lines read backwards from a file's end
(`tail.py`), and the output bound every answer keeps: compact JSON sizes, pages cut item by
item and said to be cut (`paging.py`); and the one unified-diff writer (`udiff.py`, for
`git_diff`, `edit_file` and `apply_patch`: equal head and tail lines matched by a scan, the
middle aligned by difflib only within a pair budget, a larger one shown whole). Knows nothing
of roots or rules: it is handed open files."""

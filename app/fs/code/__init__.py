"""Code by its symbols: the outline of a source file or folder, and one symbol's lines.

`languages` names a file's language by its extension (no grammar imported); `worker` is
the process that parses, under a memory limit, and `parse` the server's side of it, with
a deadline; `symbols` (run in the worker only) turns a syntax tree into symbols; `outline`
reads a file or walks a folder through a `Root` and answers the tool's result.
"""

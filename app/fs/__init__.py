"""What the tools do on disk, always through `Root` handles (`app.security`).

By capability, lowest first (`tests/test_layers.py` holds the order): `control.py`,
`hashing.py` and `re2raw.py` (what every part uses: cancel and progress, content hashes,
RE2 below its wrapper); `text/` (bytes to text and text to pages); `filters/` (which names
a walk keeps); `reading/` (read, list, stat); then, side by side, `search/` (walk and
scan), `index/` (the persistent full-text index and the ranked `search`/`fetch`),
`change/` (write, edit, move, delete into the trash) and `history/` (read-only git). A
package imports only those before it.
"""

"""Index: the persistent full-text index of a root and the ranked `search`/`fetch` on it.
One root's SQLite FTS5 index (`fts.py`): where its file lives and who may read it
(`storage.py`), the two ways into the root it uses, listing and verifying (`access.py`),
one refresh that re-reads only what changed (`refresh.py`), a file's text cut into words
(`prepare.py`, `tokens.py`: the one tokenizer, for documents and queries alike; `query.py`: a
`search` query parsed once), and what
it forgets so that removed text leaves no trace (`forget.py`). Ranking on it (`ranked.py`)
and the scan that serves when no index can (`documents.py`). The index is an accelerator:
every hit is checked again against today's rules and the disk before it is listed."""

"""The ranked full-text index of a root, behind `search` and `fetch`.

One root's SQLite FTS5 index (`fts.py`), one refresh that re-reads only what changed
(`refresh.py`), a file's text cut into words (`prepare.py`, `tokens.py`: the one tokenizer,
for documents and queries alike; `query.py`: a `search` query parsed once), and what it
forgets so that removed text leaves no trace (`forget.py`). Ranking on it (`ranked.py`) and
the scan that serves when no index can (`documents.py`)."""

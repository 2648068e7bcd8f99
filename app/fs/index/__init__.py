"""Index: the two persistent indexes of a root, each an accelerator, never the truth.

- `fulltext/`: the ranked full-text index (SQLite FTS5, BM25) behind `search` and `fetch`.
- `trigrams/`: the trigram index that narrows the files `search_text` reads.

Shared by both, and importing neither: where an index's file lives and who may read it
(`storage.py`: the state directory, never inside a root), and the two ways into the root
an index uses, listing and verifying (`access.py`). Neither package imports the other
(tests/test_layers.py). Every hit of either is checked again against today's rules and the
disk before it is listed."""

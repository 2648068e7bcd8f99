"""The trigram index of a root, which narrows the files `search_text` reads.

The index itself (`trigram.py`: SQLite, one file per root), its text in rows
(`trigram_text.py`), split over shards written at once (`shards.py`); its build, a walk in the
background (`trigram_build.py`), which first keeps or restarts what is there (`adopt.py`);
inotify's word on what changed since (`watch.py`); one file's entry in the index's view
(`entry.py`). At search time: the planner, from the strings every match holds to a query
(`grams.py`), the files it proposes with the rest read as before (`narrow.py`), and the
answer without a walk when the index may be trusted as it is (`direct.py`)."""

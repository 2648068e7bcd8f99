"""What the index forgets, and how: no text of a removed or newly denied file is left in
the index's files once the refresh that saw the change is over.

Deleted text survives in three places unless something is done about it:
- the pages that held a deleted row: `secure_delete` (set on every
  connection, `storage.open_db`) zeroes them, free pages included;
- the full-text table's segments: FTS5 deletes a row by writing a tombstone
  beside its words (SQLite before 3.44 has no `secure-delete` for FTS5), and
  the words stay until segments are merged. `purge_if_due` merges them all
  (`optimize`) after any refresh that removed a file, and after edits once the
  text they replaced reaches a quarter of what is indexed (so a search right
  after an edit does not pay for rewriting the whole index; an edited file's
  earlier words may stay in the segments until then);
- the write-ahead log, which keeps old versions of pages until a checkpoint,
  and whose file is reused, not shortened, after one: `flush` checkpoints and
  truncates it to nothing after every refresh that wrote.

A deny or allow change rebuilds the index: its tables are dropped (their pages
zeroed), not emptied row by row (`RootIndex._adopt`). Not covered: copies made
below SQLite (the file system's journal, freed disk blocks, swap), and SQLite's
temporary files (outside the state directory, deleted when opened).
"""

from __future__ import annotations

import sqlite3

PURGE_SHARE = 4  # edits purge once they replaced 1/PURGE_SHARE of the indexed text


def purge_if_due(con: sqlite3.Connection, replaced: int, removed: int, per_file: int) -> bool:
    """Merge the full-text segments (dropping the words of deleted rows) when files were
    removed, or when the text replaced since the last purge is due; True when it ran. In
    the caller's write transaction; the replaced bytes are counted in `meta`."""
    row = con.execute("SELECT value FROM meta WHERE key = 'stale'").fetchone()
    stale = (int(row[0]) if row is not None else 0) + replaced
    if not removed:
        if not stale:
            return False
        indexed = con.execute(
            "SELECT coalesce(sum(size), 0) FROM files WHERE size <= ?", (per_file,)
        ).fetchone()[0]
        if stale * PURGE_SHARE < indexed:
            if replaced:
                con.execute("INSERT OR REPLACE INTO meta VALUES ('stale', ?)", (str(stale),))
            return False
    con.execute("INSERT INTO docs(docs) VALUES ('optimize')")
    con.execute("DELETE FROM meta WHERE key = 'stale'")
    return True


FLUSH_WAIT_MS = 500  # how long a checkpoint waits for another server's reader


def flush(con: sqlite3.Connection) -> bool:
    """Write the log back into the database and truncate it to nothing; False when a
    reader (another server on the same file) held it back for FLUSH_WAIT_MS."""
    wait = con.execute("PRAGMA busy_timeout").fetchone()[0]
    con.execute(f"PRAGMA busy_timeout = {FLUSH_WAIT_MS}")
    try:
        busy = con.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
    finally:
        con.execute(f"PRAGMA busy_timeout = {int(wait)}")
    return not busy

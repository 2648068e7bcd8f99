"""A build's first step: the trigram index taken as it is, or started again from nothing.

The index is kept only for the rules it was built for (`identity`: the root, its deny and
allow rules, the server's own files, the floor) and only while every one of its files
says so: a shard file made anew (replaced because it was not ours, say) holds none of its
rows' trigrams, and trusting the rows over it would leave files out of answers.
"""

from __future__ import annotations

from collections.abc import Sequence

import apsw

from app.fs.index.trigrams.trigram import TrigramIndex, _create, _identity, make_grams


def adopt(con: apsw.Connection, idx: TrigramIndex, identity: str,
          others: Sequence[apsw.Connection] = ()) -> bool:
    """Start again when the index was built for other rules (`identity`): its tables are
    dropped (their pages zeroed), not emptied row by row; the other shards' (`others`)
    first, so that no trigram outlives the rules it was indexed under. So too when a shard
    says other rules than the index file (a shard file replaced: its rows' trigrams are
    gone). True when it did."""
    if all(_identity(c) == identity for c in (con, *others)):
        if idx.gen == 0:
            idx.load(con)
        idx.identity = identity
        return False
    idx.forget()  # first: a query under way must not trust the old view on the new tables
    for other in others:
        with other:
            other.execute("DROP TABLE IF EXISTS grams")
            make_grams(other)
            other.execute("INSERT OR REPLACE INTO meta VALUES ('identity', ?)", (identity,))
        other.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
    with con:
        con.execute("DROP TABLE IF EXISTS grams")
        con.execute("DROP TABLE IF EXISTS files")
        con.execute("DELETE FROM meta WHERE key IN ('identity', 'complete')")
        _create(con)
        con.execute("INSERT INTO meta VALUES ('identity', ?)", (identity,))
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
    idx.close()  # a reader that knew the dropped tables may hold their structure: opened anew
    idx.load(con)
    idx.identity = identity
    return True

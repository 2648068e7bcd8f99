"""The trigram index's shards when a build is killed at any moment (SIGKILL of a real
process, between or inside its commits): a row the index trusts always has its trigrams in
its shard, no trigram outlives its row, and the next builds finish the work with every file
found (docs/configuration.md, "The search index")."""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import apsw
import pytest

from app.fs.index.trigrams import shards, trigram, trigram_build
from app.fs.index.trigrams.grams import plan
from app.fs.index.trigrams.trigram import TEXT
from tests.fs.index.trigramkit import Indexed
from tests.kit import secure_root

REPO = Path(__file__).resolve().parents[3]
FILES = 300
MARK = "qzmark"

BUILD = r"""
import sys, threading
sys.path.insert(0, {repo!r})
from pathlib import Path
from app.fs.index.trigrams import trigram_build
from app.fs.index.trigrams.trigram import TrigramIndex
from tests.fs.index.trigramkit import later
from tests.kit import secure_root
trigram_build.COMMIT_BYTES = 48 << 10  # a commit every few files: many windows to die in
import time
class SlowText(trigram_build.FileText):
    # Each file's read 4 ms longer: a build of 150 files outlasts the longest wait before the
    # kill (0.5 s) on any machine, so the kills land mid-build, not after it.
    def __init__(self, *a, **kw):
        time.sleep(0.004)
        super().__init__(*a, **kw)
trigram_build.FileText = SlowText
root = secure_root(Path({top!r}))
idx = TrigramIndex({path!r})
print("go", flush=True)
trigram_build.Build(idx, root, "rules-1", threading.Event(), later).run()
print("done", flush=True)
"""


def token(i: int) -> str:
    return f"qz{i:04d}x"


def _write(top: Path, i: int, rnd: random.Random) -> None:
    filler = "".join(rnd.choice("abcdefghij \n") for _ in range(20_000))
    (top / f"f{i:04d}.txt").write_text(f"{MARK} {token(i)}\n{filler}\n")


def _edit(top: Path, rnd: random.Random, first: int) -> None:
    """Between two builds: files rewritten, removed and made, so every build has work."""
    present = sorted(int(p.name[1:5]) for p in top.iterdir())
    for i in rnd.sample(present, 120):
        _write(top, i, rnd)
    for i in rnd.sample(present, 15):
        (top / f"f{i:04d}.txt").unlink()
    for i in range(first, first + 15):
        _write(top, i, rnd)


def _ids(path: str, string: str) -> set[int]:
    """The rows of one shard holding every trigram of `string`."""
    con = apsw.Connection(path)
    try:
        return {r[0] for r in con.execute("SELECT rowid FROM grams WHERE grams MATCH ?",
                                          (plan((string,), False),))}
    finally:
        con.close()


def _check(index: str) -> int:
    """The invariants on the files as a killed build left them; the trusted rows' count."""
    con = apsw.Connection(index)
    try:
        rows = list(con.execute("SELECT id, path, size, state FROM files"))
    finally:
        con.close()
    ids = {r[0] for r in rows}
    for k, shard in enumerate(shards.paths(index)):
        marked = _ids(shard, MARK)
        assert all(i % shards.SHARDS == k for i in marked), (k, marked)
        assert marked <= ids, ("trigrams without a row", sorted(marked - ids)[:5])
    trusted = 0
    for fid, path, size, state in rows:
        if size == -1 or state != TEXT:
            continue  # pending: every search reads it
        i = int(path[1:5])
        shard = shards.shard_path(index, fid % shards.SHARDS)
        assert fid in _ids(shard, token(i)), ("a trusted row without its trigrams", path)
        trusted += 1
    return trusted


def test_a_killed_build_never_leaves_a_trusted_row_without_its_trigrams(tmp_path: Path) -> None:
    rnd = random.Random(26)
    top = tmp_path / "r"
    top.mkdir()
    for i in range(FILES):
        _write(top, i, rnd)
    index = str(tmp_path / "state" / "index" / "r.trigram.sqlite3")
    script = BUILD.format(repo=str(REPO), top=str(top), path=index)
    kills = 0
    for n in range(8):
        if n:
            _edit(top, rnd, FILES + 15 * n)
        with subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE,
                              stdin=subprocess.DEVNULL, text=True) as proc:
            assert proc.stdout is not None
            assert proc.stdout.readline().strip() == "go"
            time.sleep(rnd.uniform(0.05, 0.5))
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=60)
        kills += proc.returncode == -signal.SIGKILL
        _check(index)
    assert kills >= 5  # most runs were killed mid-build, not after it
    ix = Indexed(secure_root(top), tmp_path / "state")
    assert ix.build().complete
    names = sorted(p.name for p in top.iterdir())
    assert _check(index) == len(names)  # every row trusted, each over its trigrams
    for name in rnd.sample(names, 12):
        assert [m["path"] for m in ix.search(token(int(name[1:5])))] == [name]


def test_an_index_split_another_way_is_made_again(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """The shard count is part of the layout's name: an index split over another number of
    files (each file's trigrams in another shard) is replaced, never read as it is."""
    rnd = random.Random(3)
    top = tmp_path / "r"
    top.mkdir()
    for i in range(40):
        _write(top, i, rnd)
    index = str(tmp_path / "state" / "index" / "r.trigram.sqlite3")
    assert Indexed(secure_root(top), tmp_path / "state").build().complete
    assert _check(index) == 40
    monkeypatch.setattr(shards, "SHARDS", 3)
    monkeypatch.setattr(trigram_build, "SHARDS", 3)
    monkeypatch.setattr(trigram, "SCHEMA", "loomfs-trigram-2/3")
    ix = Indexed(secure_root(top), tmp_path / "state")
    assert ix.build().complete
    assert _check(index) == 40  # every row over its trigrams, in the shard its id names
    for i in rnd.sample(range(40), 6):
        assert [m["path"] for m in ix.search(token(i))] == [f"f{i:04d}.txt"]


def _removed(path: Path) -> None:
    for p in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
        p.unlink(missing_ok=True)


def _not_private(path: Path) -> None:
    path.chmod(0o644)  # the next open takes it for another's and makes a new one


def _not_a_database(path: Path) -> None:
    _removed(path)
    path.write_bytes(b"not a database" * 100)
    path.chmod(0o600)


@pytest.mark.parametrize("damage", [_removed, _not_private, _not_a_database],
                         ids=lambda f: f.__name__.strip("_"))
def test_a_shard_file_made_anew_is_never_trusted_for_the_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, damage: Callable[[Path], None],
) -> None:
    """A shard file replaced under a built index holds none of its rows' trigrams: a search
    must not take it at its word (it scans), and the next build makes the index again."""
    from app.fs.index.trigrams import direct
    monkeypatch.setattr(direct, "SHARE", 1.0)  # a small tree: the walk-less answer may read all
    rnd = random.Random(5)
    top = tmp_path / "r"
    top.mkdir()
    for i in range(20):
        _write(top, i, rnd)
    ix = Indexed(secure_root(top), tmp_path / "state")
    assert ix.build().complete
    index = ix.idx.path
    ix.idx.close()  # no reader holds the old file open
    ix.keeper.kick = lambda *a: None  # type: ignore[method-assign]  # no build repairs it yet
    damage(Path(shards.shard_path(index, 1)))
    for i in range(20):  # half of them have their trigrams in the shard made anew
        assert [m["path"] for m in ix.search(token(i))] == [f"f{i:04d}.txt"]
    del ix.keeper.kick
    assert ix.build().complete
    assert _check(index) == 20
    for i in range(20):
        assert [m["path"] for m in ix.search(token(i))] == [f"f{i:04d}.txt"]

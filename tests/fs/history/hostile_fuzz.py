"""Random hostile repositories from a seed, and a client that asks everything of one.

`random_repo(seed, path, scale)` writes a small repository of random objects
stored every way a hostile one may store them: loose or packed, whole or as a
delta (valid, of a wrong base size, declaring a huge result, its own base),
headers claiming other sizes, streams cut or damaged, trees out of order, with
invalid names, deep chains and entries naming what does not exist or is of
another kind, commits whose parents are themselves or missing, tags of tags.
`scale` multiplies the sizes (lies and bombs included). `ask_everything` runs
every history tool on it as a client would, following every cursor and "call
again" to the end, and returns the answers and refusals.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from app.errors import LoomError
from app.fs.control import NoControl
from app.fs.history import ops
from app.security.resolve import Root
from tests.fs.history.hostile import (
    KINDS,
    MIB,
    OFS_DELTA,
    REF_DELTA,
    Entry,
    Repo,
    commit_bytes,
    delta,
    fake_id,
    insert_ops,
    sha_of,
    tree_bytes,
    zeros,
)

NAMES = [b"f.txt", b"a", b"b.py", b".env", b"src", b"..", b"x/y", b"\xff\xfe", b"key.pem", b"z"]
MODES = ["100644", "100755", "120000", "40000", "160000"]
MAX_CALLS = 60


def _tree(rnd: random.Random, pool: dict[str, list[str]], depth: int) -> bytes:
    entries = []
    for name in rnd.sample(NAMES, rnd.randint(0, 6)):
        mode = rnd.choice(MODES)
        want = "tree" if mode == "40000" else "blob"
        if depth > 0 and mode == "40000" and rnd.random() < 0.5:
            sha = fake_id(f"deep {depth} {rnd.random()}")
        else:
            choices = pool[want] or [fake_id("none")]
            sha = rnd.choice(choices + [fake_id(str(rnd.random()))] * (rnd.random() < 0.1))
        entries.append((mode, name, sha))
    keep = rnd.random() < 0.1
    if keep:
        rnd.shuffle(entries)
    return tree_bytes(entries, keep_order=keep)


def _objects(rnd: random.Random, scale: int) -> list[tuple[str, bytes]]:
    """Blobs, trees, commits and tags, each built from those before it."""
    pool: dict[str, list[str]] = {"blob": [], "tree": [], "commit": [], "tag": []}
    out: list[tuple[str, bytes]] = []

    def add(kind: str, content: bytes) -> None:
        out.append((kind, content))
        pool[kind].append(sha_of(kind, content))

    for i in range(rnd.randint(1, 6)):
        add("blob", rnd.choice([b"fine\n", b"SECRET=1\n", b"x" * rnd.randint(0, 3000 * scale),
                                bytes([i]) * 10]))
    chain = pool["blob"][0]
    for d in range(rnd.choice([1, 2, 50, 300])):  # a chain of folders
        add("tree", tree_bytes([("40000" if d else "100644", b"d" if d else b"f.txt", chain)]))
        chain = pool["tree"][-1]
    for _ in range(rnd.randint(1, 5)):
        add("tree", _tree(rnd, pool, rnd.randint(0, 2)))
    for i in range(rnd.randint(1, 6)):
        parents = rnd.sample(pool["commit"], min(len(pool["commit"]), rnd.randint(0, 2)))
        if rnd.random() < 0.1:
            parents.append(fake_id("missing parent"))
        message = b"m" * rnd.choice([5, 1000, 70_000 * scale]) + b"\n\nbody\n"
        add("commit", commit_bytes(rnd.choice(pool["tree"]), parents, message, 1_700_000_000 + i))
    target = rnd.choice(pool["commit"] + pool["tree"])
    add("tag", f"object {target}\ntype commit\ntag t\n\n".encode() + b"t" * rnd.randint(0, 100))
    return out


def _store(rnd: random.Random, repo: Repo, objects: list[tuple[str, bytes]], scale: int) -> None:
    """Each object loose or packed, whole or as a delta, honest or not."""
    packed: list[Entry] = []
    for kind, content in objects:
        sha = sha_of(kind, content)
        how = rnd.random()
        if how < 0.35:
            repo.loose(kind, content)
        elif how < 0.42:  # a header that lies, and sometimes a stream that goes on
            body = [content] if rnd.random() < 0.5 else [content, *zeros(scale * MIB)]
            repo.loose(kind, name=sha, header=b"%s %d\0" % (kind.encode(), rnd.randint(0, 99)),
                       body=body)
        elif how < 0.45:
            repo.loose(kind, name=sha, raw=rnd.randbytes(rnd.randint(0, 64)))
        else:
            packed.append(_packed(rnd, kind, content, sha, packed, scale))
    if packed:
        repo.pack(packed)


def _packed(rnd: random.Random, kind: str, content: bytes, sha: str, before: list[Entry],
            scale: int) -> Entry:
    how = rnd.random()
    bases = [i for i, e in enumerate(before) if e.kind == KINDS[kind] and isinstance(
        e.payload, bytes)]
    if how < 0.5 or not bases:
        size = len(content) if rnd.random() < 0.9 else rnd.randint(0, 2 * len(content) + 1)
        raw = rnd.randbytes(8) if rnd.random() < 0.05 else None
        return Entry(sha, KINDS[kind], content, size=size, raw=raw)
    base = rnd.choice(bases)
    payload = before[base].payload
    base_len = len(payload) if isinstance(payload, bytes) else 0
    src = base_len if rnd.random() < 0.9 else base_len + 1
    dst = len(content) if rnd.random() < 0.9 else 300 * MIB * scale
    data = delta(src, dst, insert_ops(content))
    if how < 0.8:
        return Entry(sha, OFS_DELTA, data, base=base if rnd.random() < 0.95 else -1)
    ref = before[base].sha if rnd.random() < 0.9 else sha
    return Entry(sha, REF_DELTA, data, base=ref)


def random_repo(seed: int, path: Path, scale: int = 1) -> None:
    rnd = random.Random(seed)
    repo = Repo.init(path)
    objects = _objects(rnd, scale)
    _store(rnd, repo, objects, scale)
    commits = [sha_of(k, c) for k, c in objects if k == "commit"]
    repo.ref("refs/heads/main", rnd.choice(commits))
    if rnd.random() < 0.3:
        repo.ref("refs/tags/t", sha_of(*objects[-1]))
    (path / "f.txt").write_bytes(rnd.choice([b"fine\n", b"changed\n"]))
    if rnd.random() < 0.3:
        (path / ".git" / "index").write_bytes(b"DIRC" + rnd.randbytes(rnd.randint(0, 200)))


def _follow(call: Any, **kw: Any) -> list[str]:
    """What a client following every cursor and "call again" is told, to the end."""
    told: list[str] = []
    for _ in range(MAX_CALLS):
        try:
            page = call(**kw)
        except LoomError as exc:
            told.append(exc.message)
            if "call again" in exc.message:
                continue
            return told
        told.append(page.model_dump_json())
        if not page.has_more:
            return told
        assert page.next_cursor and page.next_cursor != kw.get("cursor"), "a cursor did not move"
        kw["cursor"] = page.next_cursor
    raise AssertionError(f"a client was still following after {MAX_CALLS} calls")


def ask_everything(root: Root, cap: int = 4000) -> list[str]:
    c = NoControl()
    told: list[str] = []
    log = dict(offset=0, limit=20, cap=cap, control=c, cursor=None)
    show = dict(start_line=1, end_line=300, offset=0, cap=cap, control=c)
    diff = dict(offset=0, cap=cap, read_budget=1 << 22, control=c, path="")
    told += _follow(ops.git_log, root=root, path="", commit="HEAD", **log)
    told += _follow(ops.git_log, root=root, path="f.txt", commit="HEAD", **log)
    told += _follow(ops.git_show, root=root, commit="HEAD", path=None, **show)
    for rev in ("HEAD", "t"):
        told += _follow(ops.git_show, root=root, commit=rev, path="f.txt", **show)
    told += _follow(ops.git_diff, root=root, base="HEAD~1", target="HEAD", **diff)
    told += _follow(ops.git_diff, root=root, base="HEAD", target=None, **diff)
    return told

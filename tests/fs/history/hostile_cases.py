"""The named hostile shapes: each writes one repository and says what to ask of it.

Every repository has `HEAD` on `refs/heads/main` and a first commit holding
`f.txt` = "fine\\n", so a diff has a base; the shape is in the commit after it
(`HEAD`), or in a pack or loose object that commit reaches.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tests.fs.history.hostile import (
    KINDS,
    MIB,
    OFS_DELTA,
    REF_DELTA,
    Entry,
    Probe,
    Repo,
    commit_bytes,
    copy_op,
    delta,
    fake_id,
    insert_ops,
    sha_of,
    tree_bytes,
    zeros,
)

BOMB = 512 * MIB  # what the lying streams inflate to
FILE = b"fine\n"


def _start(path: Path) -> tuple[Repo, str]:
    repo = Repo.init(path)
    blob = repo.blob(FILE)
    first = repo.commit(repo.tree([("100644", b"f.txt", blob)]), message=b"first\n")
    repo.ref("refs/heads/main", first)
    return repo, first


def _on_top(repo: Repo, first: str, entries: list[tuple[str, bytes, str]],
            message: bytes = b"second\n") -> str:
    head = repo.commit(repo.tree(entries), [first], message, when=1_700_000_100)
    repo.ref("refs/heads/main", head)
    return head


def loose_bomb(path: Path, bomb: int = BOMB) -> Probe:
    """A loose blob whose header says 10 bytes and whose stream inflates to 512 MiB."""
    repo, first = _start(path)
    name = sha_of("blob", b"ten bytes\n")
    repo.loose("blob", name=name, header=b"blob 10\0", body=zeros(bomb))
    _on_top(repo, first, [("100644", b"f.txt", name)])
    return Probe(base="HEAD~1")


def loose_bomb_by_prefix(path: Path) -> Probe:
    """The same object named by an abbreviated id: resolving it inflates nothing."""
    loose_bomb(path)
    return Probe(commit=sha_of("blob", b"ten bytes\n")[:10], path=None,
                 error="not a commit|corrupt|above")


def pack_bomb(path: Path, bomb: int = BOMB) -> Probe:
    """A packed blob whose entry header says 10 bytes; its stream inflates to 512 MiB."""
    repo, first = _start(path)
    name = sha_of("blob", b"ten bytes\n")
    repo.pack([Entry(name, KINDS["blob"], lambda: zeros(bomb), size=10)])
    _on_top(repo, first, [("100644", b"f.txt", name)])
    return Probe(base="HEAD~1")


def delta_huge_middle(path: Path, middle: int = 256 * MIB) -> Probe:
    """A 1 KB pack: 64 KiB base, a delta to a 256 MiB middle, a delta to 10 bytes."""
    repo, first = _start(path)
    base = b"x" * 65536
    last = b"x" * 9 + b"\n"
    to_middle = delta(len(base), middle, copy_op(0, 0x10000) * (middle // 0x10000))
    to_last = delta(middle, len(last), copy_op(0, 9) + insert_ops(b"\n"))
    repo.pack([
        Entry(fake_id("base"), KINDS["blob"], base),
        Entry(fake_id("middle"), OFS_DELTA, to_middle, base=0),
        Entry(sha_of("blob", last), OFS_DELTA, to_last, base=1),
    ])
    _on_top(repo, first, [("100644", b"f.txt", sha_of("blob", last))])
    return Probe(base="HEAD~1")


def delta_work(path: Path) -> Probe:
    """A chain of 200 deltas, each result 8 MiB: every step within the object limit,
    1.6 GB of work in all."""
    repo, first = _start(path)
    size = 8 * MIB
    step = delta(size, size, copy_op(0, 0x10000) * (size // 0x10000 - 1)
                 + insert_ops(b"y" * 65535 + b"\n"))
    entries = [Entry(fake_id("w0"), KINDS["blob"], lambda: [b"y" * size], size=size)]
    for i in range(1, 200):
        entries.append(Entry(fake_id(f"w{i}"), OFS_DELTA, step, base=i - 1))
    last = sha_of("blob", b"y" * (size - 1) + b"\n")
    entries[-1].sha = last
    repo.pack(entries)
    _on_top(repo, first, [("100644", b"f.txt", last)])
    return Probe(base="HEAD~1")


def deep_delta_chain(path: Path) -> Probe:
    """20,000 deltas of one byte each, deeper than any pack git writes (4,095)."""
    repo, first = _start(path)
    entries = [Entry(fake_id("d0"), KINDS["blob"], b"a")]
    one = delta(1, 1, insert_ops(b"a"))
    entries += [Entry(fake_id(f"d{i}"), OFS_DELTA, one, base=i - 1) for i in range(1, 20_000)]
    entries[-1].sha = sha_of("blob", b"a")
    repo.pack(entries)
    _on_top(repo, first, [("100644", b"f.txt", sha_of("blob", b"a"))])
    return Probe(base="HEAD~1")


def delta_to_itself(path: Path) -> Probe:
    """A ref-delta whose base is its own id, and an ofs-delta whose base is itself."""
    repo, first = _start(path)
    a, b = sha_of("blob", b"a\n"), sha_of("blob", b"b\n")
    repo.pack([Entry(a, REF_DELTA, delta(2, 2, insert_ops(b"a\n")), base=a),
               Entry(b, OFS_DELTA, delta(2, 2, insert_ops(b"b\n")), base=-1)])
    _on_top(repo, first, [("100644", b"f.txt", a), ("100644", b"g.txt", b)])
    return Probe(base="HEAD~1")


def delta_cycle(path: Path) -> Probe:
    """Two ref-deltas, each the other's base."""
    repo, first = _start(path)
    a, b = sha_of("blob", b"a\n"), sha_of("blob", b"b\n")
    repo.pack([Entry(a, REF_DELTA, delta(2, 2, insert_ops(b"a\n")), base=b),
               Entry(b, REF_DELTA, delta(2, 2, insert_ops(b"b\n")), base=a)])
    _on_top(repo, first, [("100644", b"f.txt", a)])
    return Probe(base="HEAD~1")


def huge_messages(path: Path, size: int = 40 * MIB) -> Probe:
    """Three commits with 40 MiB messages of one line (a subject of 40 MiB)."""
    repo, first = _start(path)
    tree = repo.tree([("100644", b"f.txt", repo.blob(b"two\n"))])
    parent = first
    for i in range(3):
        msg = b"m" * size + b"\n"
        content = commit_bytes(tree, [parent], msg, 1_700_000_100 + i)
        parent = repo.loose("commit", content)
    repo.ref("refs/heads/main", parent)
    return Probe(base="HEAD~3")


def huge_tag_message(path: Path) -> Probe:
    """An annotated tag with a 40 MiB message, named as the commit."""
    repo, first = _start(path)
    body = f"object {first}\ntype commit\ntag big\ntagger Eve <e@x> 1 +0000\n\n".encode()
    tag = repo.loose("tag", body + b"t" * (40 * MIB))
    repo.ref("refs/tags/big", tag)
    return Probe(commit="big")


def wide_tree(path: Path, n: int = 300_000) -> Probe:
    """A commit whose tree holds 300,000 files (one blob)."""
    repo, first = _start(path)
    blob = repo.blob(b"same\n")
    entries = [("100644", f"f{i:06d}".encode(), blob) for i in range(n)]
    entries.append(("100644", b"f.txt", blob))
    _on_top(repo, first, entries)
    return Probe(path=f"f{n - 1:06d}", base="HEAD~1")


def deep_tree(path: Path, depth: int = 20_000) -> Probe:
    """A tree 20,000 levels deep (`d/d/.../d/x.txt`) beside `f.txt`, at a commit and by a
    ref of its own; `.env` at the bottom, and a copy of it as `f.txt`."""
    repo, first = _start(path)
    blob = repo.blob(b"deep\n")
    tree = repo.tree([("100644", b"x.txt", blob), ("100644", b".env", repo.blob(b"DEEP\n"))])
    for _ in range(depth):
        tree = repo.tree([("40000", b"d", tree)])
    repo.ref("refs/tags/deep", tree)
    top = repo.tree([("40000", b"d", tree), ("100644", b"f.txt", repo.blob(FILE)),
                     ("100644", b"copy.txt", repo.blob(b"DEEP\n"))])
    head = repo.commit(top, [first], b"deep\n", when=1_700_000_100)
    repo.ref("refs/heads/main", head)
    return Probe(base="HEAD~1")


def missing_blob(path: Path) -> Probe:
    """A tree entry naming a blob the repository does not have."""
    repo, first = _start(path)
    _on_top(repo, first, [("100644", b"f.txt", fake_id("gone"))])
    return Probe(base="HEAD~1")


def missing_tree_and_parent(path: Path) -> Probe:
    """A commit whose tree is missing, on a parent that is missing too."""
    repo, _ = _start(path)
    head = repo.commit(fake_id("no tree"), [fake_id("no parent")], b"orphan\n")
    repo.ref("refs/heads/main", head)
    return Probe(path="f.txt", base=None, error="missing")


def self_parent(path: Path) -> Probe:
    """A packed commit whose parent is itself: the index files it under a crafted id."""
    repo, _ = _start(path)
    tree = repo.tree([("100644", b"f.txt", repo.blob(b"two\n"))])
    crafted = fake_id("self")
    repo.pack([Entry(crafted, KINDS["commit"], commit_bytes(tree, [crafted]))])
    repo.ref("refs/heads/main", crafted)
    return Probe(error="corrupt")


def loose_under_wrong_name(path: Path) -> Probe:
    """A loose commit filed under an id that is not its own, whose parent is that id."""
    repo, first = _start(path)
    tree = repo.tree([("100644", b"f.txt", repo.blob(b"two\n"))])
    crafted = fake_id("loose self")
    repo.loose("commit", commit_bytes(tree, [crafted, first]), name=crafted)
    repo.ref("refs/heads/main", crafted)
    return Probe(error="corrupt|missing")


def tag_to_itself(path: Path) -> Probe:
    repo, _ = _start(path)
    crafted = fake_id("tag self")
    body = f"object {crafted}\ntype tag\ntag t\ntagger Eve <e@x> 1 +0000\n\nloop\n".encode()
    repo.loose("tag", body, name=crafted)
    repo.ref("refs/tags/t", crafted)
    return Probe(commit="t", error="corrupt|missing|not a commit")


def corrupt_objects(path: Path) -> Probe:
    """Garbage where a loose blob should be, a truncated pack entry, a bad tree."""
    repo, first = _start(path)
    garbage = sha_of("blob", b"garbage\n")
    repo.loose("blob", name=garbage, raw=b"not zlib at all" * 10)
    truncated = sha_of("blob", b"cut\n" * 100)
    repo.pack([Entry(truncated, KINDS["blob"], b"cut\n" * 100, raw=b"\x78\x9c\x4b")])
    bad = repo.loose("tree", b"100644 no-nul-here" + b"\x01" * 25)
    entries = [("100644", b"f.txt", garbage), ("100644", b"g.txt", truncated),
               ("40000", b"sub", bad)]
    _on_top(repo, first, entries)
    return Probe(base="HEAD~1")


def unsorted_tree(path: Path) -> Probe:
    """A tree whose entries are out of order and repeated."""
    repo, first = _start(path)
    a, b = repo.blob(b"a\n"), repo.blob(b"b\n")
    raw = tree_bytes([("100644", b"z.txt", a), ("100644", b"f.txt", b),
                      ("100644", b"f.txt", a)], keep_order=True)
    head = repo.commit(repo.loose("tree", raw), [first], b"unsorted\n", when=1_700_000_100)
    repo.ref("refs/heads/main", head)
    return Probe(base="HEAD~1")


def tree_without_nul(path: Path, size: int = 64 * 1024) -> Probe:
    """A 64 KiB tree of `1 1 1 ...`: every other byte starts an entry whose name never ends."""
    repo, first = _start(path)
    head = repo.commit(repo.loose("tree", b"1 " * (size // 2)), [first], b"no nul\n",
                       when=1_700_000_100)
    repo.ref("refs/heads/main", head)
    return Probe(base="HEAD~1")


def many_parents(path: Path) -> Probe:
    """An octopus of 100,000 parents (all the first commit): a 4.8 MB header."""
    repo, first = _start(path)
    tree = repo.tree([("100644", b"f.txt", repo.blob(b"two\n"))])
    head = repo.commit(tree, [first] * 100_000, b"octopus\n", when=1_700_000_100)
    repo.ref("refs/heads/main", head)
    return Probe(base="HEAD~1")


CASES: dict[str, Callable[[Path], Probe]] = {
    f.__name__: f for f in (
        loose_bomb, loose_bomb_by_prefix, pack_bomb, delta_huge_middle, delta_work,
        deep_delta_chain, delta_to_itself, delta_cycle, huge_messages, huge_tag_message,
        wide_tree, deep_tree, missing_blob, missing_tree_and_parent, self_parent,
        loose_under_wrong_name, tag_to_itself, corrupt_objects, unsorted_tree, tree_without_nul,
        many_parents,
    )
}

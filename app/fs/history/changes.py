"""What changed between two trees, in path order, from any point on: the pages of
git_show's file list and of git_diff.

`iter_changes` walks both trees at once, entry by entry in git's order (which is
the order of the full paths as bytes), descending only where the two sides
differ, and yields each change as it finds it: nothing is collected, so a page
costs the entries it passes. Given `after` (the last path a previous page
showed), it skips whole entries before that path at each level of it without
descending into them: page k does not walk the pages before it. Folders whose
paths would pass `MAX_PATH` characters are not descended into (counted).

`listing` pairs exact renames (same content and mode, as `git diff -M100%`)
when the comparison has at most `RENAME_SCAN` changes; past that it streams
without pairing, and says so.
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import islice

from app.errors import BadArgument
from app.fs.history.treeobj import Tree, is_dir
from app.fs.history.trees import MAX_PATH, Change, Hidden, Trees, join, kind, valid_name

RENAME_SCAN = 10_000
Side = tuple[int, bytes]  # (mode, hex id)


def _named(tree: Tree | None, hidden: Hidden) -> Iterator[tuple[bytes, str, Side]]:
    """(order key, name, side) of a tree's entries with valid names."""
    if tree is None:
        return
    for raw, mode, sha, _ in tree.entries():
        name = valid_name(raw)
        if name is None:
            hidden.invalid += 1
            continue
        yield (raw + b"/" if is_dir(mode) else raw), name, (mode, sha)


def _merged(a: Iterator[tuple[bytes, str, Side]], b: Iterator[tuple[bytes, str, Side]]
            ) -> Iterator[tuple[bytes, str, Side | None, Side | None]]:
    x, y = next(a, None), next(b, None)
    while x is not None or y is not None:
        if y is None or (x is not None and x[0] < y[0]):
            assert x is not None
            yield x[0], x[1], x[2], None
            x = next(a, None)
        elif x is None or y[0] < x[0]:
            yield y[0], y[1], None, y[2]
            y = next(b, None)
        else:
            yield x[0], x[1], x[2], y[2]
            x, y = next(a, None), next(b, None)


def _leaf(path: str, old: Side | None, new: Side | None) -> Change | None:
    if old == new:
        return None
    if old is None and new is not None:
        return Change(path, "added", None, new[1], 0, new[0])
    if new is None and old is not None:
        return Change(path, "deleted", old[1], None, old[0], 0)
    assert old is not None and new is not None
    change = "modified" if kind(old[0]) == kind(new[0]) else "type_changed"
    return Change(path, change, old[1], new[1], old[0], new[0])


def iter_changes(trees: Trees, old: Side | None, new: Side | None, parts: tuple[str, ...],
                 hidden: Hidden, after: tuple[str, ...] | None = None) -> Iterator[Change]:
    """Changes between `old` and `new` (entries at `parts`: trees, files or None), in
    path order, those at or before the path `after` left out."""
    if old == new:
        return
    old_dir = old is not None and is_dir(old[0])
    new_dir = new is not None and is_dir(new[0])
    old_leaf, new_leaf = (None if old_dir else old), (None if new_dir else new)
    if after is None and (old_leaf is not None or new_leaf is not None):
        change = _leaf(join(parts), old_leaf, new_leaf)  # a file here, or one became a folder
        if change is not None:
            yield change
    if old_dir or new_dir:
        rest = after[len(parts):] if after is not None else ()
        yield from _walk(trees, old if old_dir else None, new if new_dir else None, parts,
                         hidden, rest)


def _walk(trees: Trees, old: Side | None, new: Side | None, parts: tuple[str, ...],
          hidden: Hidden, rest: tuple[str, ...]) -> Iterator[Change]:
    stack = [_frame(trees, old, new, hidden, parts, rest)]
    seen = 0
    while stack:
        sub_parts, entries, skip = stack[-1]
        item = next(entries, None)
        if item is None:
            stack.pop()
            continue
        key, name, x, y = item
        nested: tuple[str, ...] = ()
        if skip is not None:
            if key < skip[0]:
                continue
            if key == skip[0]:
                stack[-1] = (sub_parts, entries, None)
                if not skip[1]:
                    continue  # the last path shown
                nested = skip[1]
            else:
                stack[-1] = (sub_parts, entries, None)
        sub = (*sub_parts, name)
        seen += 1
        if seen % 256 == 0:
            trees.check()
        if trees.denied(sub):
            for e in (x, y):  # pruned, never descended; a blob's id is kept
                if e is not None and not is_dir(e[0]):
                    hidden.denied_blobs.add(e[1])
            if x != y:
                hidden.denied_paths.add(join(sub))
            continue
        if x == y:
            continue
        if not key.endswith(b"/"):
            change = _leaf(join(sub), x, y)
            if change is not None:
                yield change
        elif len(join(sub)) + 2 > MAX_PATH:
            hidden.too_long += 1
        else:
            stack.append(_frame(trees, x, y, hidden, sub, nested))


def _frame(trees: Trees, old: Side | None, new: Side | None, hidden: Hidden,
           parts: tuple[str, ...], rest: tuple[str, ...]
           ) -> tuple[tuple[str, ...], Iterator[tuple[bytes, str, Side | None, Side | None]],
                      tuple[bytes, tuple[str, ...]] | None]:
    a = trees.tree(old[1]) if old is not None else None
    b = trees.tree(new[1]) if new is not None else None
    skip = None
    if rest:
        head = rest[0].encode("utf-8")
        skip = (head + b"/" if len(rest) > 1 else head, rest[1:])
    return parts, _merged(_named(a, hidden), _named(b, hidden)), skip


def pair_renames(changes: list[Change]) -> list[Change]:
    """Exact renames (same content and mode), as `git diff -M100%` finds them."""
    added: dict[tuple[bytes | None, int], list[int]] = {}
    for i, c in enumerate(changes):
        if c.change == "added" and c.new_sha is not None:
            added.setdefault((c.new_sha, c.new_mode), []).append(i)
    taken: set[int] = set()
    renamed: dict[int, Change] = {}
    for i, c in enumerate(changes):
        if c.change != "deleted":
            continue
        cands = [j for j in added.get((c.old_sha, c.old_mode), []) if j not in taken]
        if cands:
            j = cands[0]
            taken.update((i, j))
            n = changes[j]
            renamed[j] = Change(n.path, "renamed", c.old_sha, n.new_sha, c.old_mode, n.new_mode,
                                c.path)
    return [renamed.get(i, c) for i, c in enumerate(changes) if i in renamed or i not in taken]


def listing(trees: Trees, old: bytes | None, new: bytes | None, parts: tuple[str, ...],
            hidden: Hidden, after: tuple[str, ...] | None = None) -> Iterator[Change]:
    """The changes between two trees (None: empty) at or below `parts`, in path order,
    those at or before `after` left out; renames paired in comparisons small enough."""
    old_e = trees.lookup(old, parts) if old is not None else None
    new_e = trees.lookup(new, parts) if new is not None else None
    scratch = Hidden()
    first = list(islice(iter_changes(trees, old_e, new_e, parts, scratch), RENAME_SCAN + 1))
    if len(first) <= RENAME_SCAN:
        hidden.merge(scratch)
        mark = join(after).encode("utf-8") if after is not None else None
        for c in pair_renames(first):
            if mark is None or c.path.encode("utf-8") > mark:
                yield c
        return
    hidden.unpaired = True
    yield from iter_changes(trees, old_e, new_e, parts, hidden, after)


def encode_cursor(shown: int, path: str) -> str:
    """Where a file list continues: how many were shown, and the last path shown."""
    return f"{shown}:{path}"


def decode_cursor(text: str, prefix: tuple[str, ...]) -> tuple[int, tuple[str, ...]]:
    """(shown, the last path shown) from a cursor; it must lie below `prefix`."""
    count, sep, path = text.partition(":")
    parts = tuple(path.split("/"))
    if (not sep or not count.isdigit() or len(count) > 9 or len(path) > MAX_PATH + 256
            or any(valid_name(p.encode("utf-8", "surrogatepass")) != p for p in parts)
            or parts[: len(prefix)] != prefix or len(parts) <= len(prefix)):
        raise BadArgument("invalid cursor: pass next_cursor from a previous result")
    return int(count), parts

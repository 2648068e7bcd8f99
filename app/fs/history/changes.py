"""What changed between two trees, in path order, from any point on.

`iter_changes` walks both trees at once, entry by entry in git's order (which
is the order of the full paths as bytes), descending only where the two
sides differ, and yields each change as it finds it: nothing is collected, so
a page costs the entries it passes. Each change carries where it was found
(`Change.where`: per level of its path, each side's byte position in its
tree). Given `after` (the last path a page showed) and those positions, the
next page starts parsing at them: page k does not walk the pages before it.
Without positions (a cursor from elsewhere) it skips whole entries before
`after` at each level of it, never descending into them. Folders whose paths
would pass `MAX_PATH` characters are not descended into (counted).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

from app.fs.history.treeobj import Tree, hexid, is_dir, sort_key
from app.fs.history.trees import MAX_PATH, Change, Hidden, Trees, join, kind, valid_name

Side = tuple[int, bytes]  # (mode, id): hex where given, binary as read from a tree
Named = tuple[bytes, str, Side, int]  # order key, name, side, where it starts
Where = tuple[tuple[int, int], ...]
Item = tuple[bytes, str, Side | None, Side | None, tuple[int, int]]


def _named(tree: Tree | None, hidden: Hidden, start: int) -> Iterator[Named]:
    """A tree's entries with valid names, from the entry at byte `start` on."""
    if tree is None:
        return
    at = start
    for raw, mode, sha, end in tree.entries(start):
        name = valid_name(raw)
        if name is None:
            hidden.invalid += 1
        else:
            yield sort_key(raw, mode), name, (mode, sha), at
        at = end


def _merged(a: Iterator[Named], b: Iterator[Named], a_end: int, b_end: int) -> Iterator[Item]:
    """Both sides' entries by order key; each with both sides' positions there."""
    x, y = next(a, None), next(b, None)
    while x is not None or y is not None:
        xpos = x[3] if x is not None else a_end
        ypos = y[3] if y is not None else b_end
        if y is None or (x is not None and x[0] < y[0]):
            assert x is not None
            yield x[0], x[1], x[2], None, (xpos, ypos)
            x = next(a, None)
        elif x is None or y[0] < x[0]:
            yield y[0], y[1], None, y[2], (xpos, ypos)
            y = next(b, None)
        else:
            yield x[0], x[1], x[2], y[2], (xpos, ypos)
            x, y = next(a, None), next(b, None)


def _hex(side: Side | None) -> Side | None:
    return side if side is None or len(side[1]) == 40 else (side[0], hexid(side[1]))


def _leaf(path: str, old: Side | None, new: Side | None) -> Change | None:
    old, new = _hex(old), _hex(new)
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
                 hidden: Hidden, after: tuple[str, ...] | None = None, where: Where = ()
                 ) -> Iterator[Change]:
    """Changes between `old` and `new` (entries at `parts`: trees, files or None), in
    path order, those at or before the path `after` left out (`where`: its positions)."""
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
        walk = _Walk(trees, hidden)
        walk.push(old if old_dir else None, new if new_dir else None, parts, rest, where)
        yield from walk.run()


class _Walk:
    """The depth-first walk: a stack of frames, one per folder on the current path."""

    def __init__(self, trees: Trees, hidden: Hidden) -> None:
        self.trees = trees
        self.hidden = hidden
        # parts, entries, the key to skip up to and what is left of `after`, positions
        self.stack: list[tuple[tuple[str, ...], Iterator[Item],
                               tuple[bytes, tuple[str, ...]] | None, tuple[int, int]]] = []

    def push(self, old: Side | None, new: Side | None, parts: tuple[str, ...],
             rest: tuple[str, ...], where: Where) -> None:
        old, new = _hex(old), _hex(new)
        a = self.trees.tree(old[1]) if old is not None else None
        b = self.trees.tree(new[1]) if new is not None else None
        ax, bx = where[0] if where else (0, 0)
        # A position is used only inside its tree (the cursor's MAC vouches for the rest).
        ax = ax if a is not None and 0 <= ax <= len(a.raw) else 0
        bx = bx if b is not None and 0 <= bx <= len(b.raw) else 0
        skip = None
        if rest:
            head = rest[0].encode("utf-8")
            skip = (head + b"/" if len(rest) > 1 else head, rest[1:])
        entries = _merged(_named(a, self.hidden, ax), _named(b, self.hidden, bx),
                          len(a.raw) if a else -1, len(b.raw) if b else -1)
        self.stack.append((parts, entries, skip, (ax, bx)))
        self.where = where[1:]

    def run(self) -> Iterator[Change]:
        seen = 0
        stack = self.stack
        while stack:
            parts, entries, skip, _ = stack[-1]
            item = next(entries, None)
            if item is None:
                stack.pop()
                continue
            key, name, x, y, pos = item
            stack[-1] = (parts, entries, skip, pos)
            nested, go = self._skip(key, skip)
            if not go:
                continue
            seen += 1
            if seen % 256 == 0:
                self.trees.check()
            change = self._one((*parts, name), key, x, y, nested)
            if change is not None:
                yield replace(change, where=tuple(f[3] for f in stack))

    def _skip(self, key: bytes, skip: tuple[bytes, tuple[str, ...]] | None
              ) -> tuple[tuple[str, ...], bool]:
        """(what is left of `after` below this entry, whether to look at it at all)."""
        if skip is None:
            return (), True
        if key < skip[0]:
            return (), False
        parts, entries, _, pos = self.stack[-1]
        self.stack[-1] = (parts, entries, None, pos)
        if key == skip[0]:
            return skip[1], bool(skip[1])  # a file: the last one shown, not again
        self.where = ()
        return (), True

    def _one(self, sub: tuple[str, ...], key: bytes, x: Side | None, y: Side | None,
             nested: tuple[str, ...]) -> Change | None:
        hidden = self.hidden
        if self.trees.denied(sub):
            for e in (x, y):  # pruned, never descended; a blob's id is kept
                if e is not None and not is_dir(e[0]):
                    hidden.denied_blobs.add(hexid(e[1]))
            if x != y:
                hidden.denied_paths.add(join(sub))
            return None
        if x == y:
            return None
        if not key.endswith(b"/"):
            return _leaf(join(sub), x, y)
        if len(join(sub)) + 2 > MAX_PATH:
            hidden.too_long += 1
        else:
            self.push(x, y, sub, nested, self.where if nested else ())
        return None

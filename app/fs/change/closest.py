"""The closest block to an old_text no level found: what the refusal shows, so that the next
try is right.

The block is the window of old_text's line count whose lines most often occur in
old_text (compared as the loosest level compares: stripped, look-alikes folded, read
prefixes removed when every line has one), found in one pass over the file's interned
line keys (`Matcher.ids`), whatever the sizes. How similar it is: difflib's ratio of
the two lists of keys when their product is within the diff writer's PAIR_LIMIT, else the
share of the block's lines that occur in old_text. The diff (old_text as `-`, the file
as `+`) is `fs/text/udiff.py`'s, cut to SHOWN_LINES lines of at most LINE_CHARS each.
"""

from __future__ import annotations

from difflib import SequenceMatcher

from app.fs.change.match import Matcher, key_at, numbered, split_ends
from app.fs.text import udiff

SHOWN_LINES = 16
LINE_CHARS = 160
LOOSEST = 4  # Matcher.ids' level of stripped, folded lines


def closest(matcher: Matcher, old: str) -> str | None:
    """`closest block: lines 12-15 (83% similar), old_text (-) against the file (+):` and
    a short diff; None when no line of old_text occurs in the file."""
    core = split_ends(old).core
    core = numbered(core) or core
    m = len(core)
    if not m or not matcher.lines:
        return None
    hay, ids = matcher.ids(LOOSEST)
    key = key_at(LOOSEST)
    wanted = {ids[k] for k in (key(line) for line in core) if k in ids}
    if not wanted:
        return None
    n = len(hay)
    width = min(m, n)
    hits = sum(c in wanted for c in hay[:width])
    best, at = hits, 0
    for i in range(width, n):  # slide the window one line down
        hits += (hay[i] in wanted) - (hay[i - width] in wanted)
        if hits > best:
            best, at = hits, i - width + 1
    matcher.work += n
    block = matcher.lines[at : at + width]
    share = _similar([key(x) for x in core], [key(x) for x in block], best)
    diff = _diff(core, block, matcher)
    return (f"closest block: lines {at + 1}-{at + width} ({share:.0%} similar), "
            f"old_text (-) against the file (+):\n{diff}")


def _similar(core: list[str], block: list[str], hits: int) -> float:
    if len(core) * len(block) <= udiff.PAIR_LIMIT:
        return SequenceMatcher(None, core, block, autojunk=False).ratio()
    return hits / max(len(core), len(block))


def _diff(core: list[str], block: list[str], matcher: Matcher) -> str:
    old = "".join(line + "\n" for line in core)
    new = "".join(line + "\n" for line in block)
    shown: list[str] = []
    for _count, lines in udiff.hunks(old, new, udiff.Pairs(), matcher.control):
        for line in lines:
            if line.startswith("@@"):
                continue
            if len(shown) == SHOWN_LINES:
                shown.append("...")
                return "\n".join(shown)
            line = line.rstrip("\n")
            shown.append(line if len(line) <= LINE_CHARS else line[:LINE_CHARS] + "...")
    return "\n".join(shown)

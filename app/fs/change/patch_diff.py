"""The diff `apply_patch` answers with: what it did, one git-style section per file, made by
the one writer (`fs/text/udiff.py`) and cut to a budget.

Each file: `diff --git a/p b/p`, `new file mode`/`deleted file mode` for an added or removed
file, `rename from`/`rename to` for a moved one, then, when its content changed, `---`/`+++`
(`/dev/null` for the side that is none) and its hunks. Names that need it are C-quoted as
git quotes them. A diff cut to fit ends with a bracketed line saying how long it was.
"""

from __future__ import annotations

import json
import stat as stat_mod
from collections.abc import Iterator, Sequence
from typing import Protocol

from app.fs.control import Control
from app.fs.text import udiff

CUT_LINE = "[diff cut to fit max_output_chars: {total} lines in full]\n"
_QUOTED = {'"': '\\"', "\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"}


class Changed(Protocol):
    """What the diff reads of one file's step (`patch.Step`)."""

    @property
    def change(self) -> str: ...
    @property
    def rel(self) -> str: ...
    @property
    def old_rel(self) -> str: ...
    @property
    def before(self) -> str: ...
    @property
    def after(self) -> str: ...
    @property
    def seen(self) -> object: ...


def quoted(prefix: str, name: str) -> str:
    """`prefix` + `name`, C-quoted as git writes a name holding quotes, backslashes or
    control characters."""
    full = prefix + name
    if not any(c in _QUOTED or ord(c) < 0x20 or ord(c) == 0x7F for c in full):
        return full
    body = "".join(_QUOTED.get(c) or (f"\\{ord(c):03o}" if ord(c) < 0x20 or ord(c) == 0x7F
                                      else c) for c in full)
    return f'"{body}"'


def _head(step: Changed) -> list[str]:
    a, b = quoted("a/", step.old_rel), quoted("b/", step.rel)
    out = [f"diff --git {a} {b}\n"]
    mode = getattr(step.seen, "st_mode", None)
    bits = f"100{stat_mod.S_IMODE(mode) & 0o777:o}" if isinstance(mode, int) else "100644"
    if step.change == "added":
        out.append("new file mode 100644\n")
        a = "/dev/null"
    elif step.change == "deleted":
        out.append(f"deleted file mode {bits}\n")
        b = "/dev/null"
    elif step.change == "moved":
        out += [f"rename from {quoted('', step.old_rel)}\n",
                f"rename to {quoted('', step.rel)}\n"]
    if step.before != step.after:
        out += [f"--- {a}\n", f"+++ {b}\n"]
    return out


def _sections(steps: Sequence[Changed], pairs: udiff.Pairs,
              control: Control) -> Iterator[udiff.Hunk]:
    for step in steps:
        if step.change == "modified" and step.before == step.after:
            continue  # context-only hunks: nothing was done to it
        head = _head(step)
        yield len(head), head
        yield from udiff.hunks(step.before, step.after, pairs, control)


def patch_diff(steps: Sequence[Changed], budget: int | None, control: Control) -> str:
    """The diff of every step, cut to `budget` characters of JSON text (None: whole)."""
    kept, cut, total = udiff.write(_sections(steps, udiff.Pairs(), control), budget, _cost)
    return "".join(kept) + (CUT_LINE.format(total=total) if cut else "")


def _cost(line: str) -> int:
    """Characters of `line` in the JSON answer."""
    return len(json.dumps(line, ensure_ascii=False)) - 2

"""The literal every match of a regex holds: what `search_text` looks for before RE2 runs.

A file without that literal cannot match, so it is passed over at memchr speed
(`app.fs.search.regex`). The scan is conservative: unsure of a construct, it answers
None and the pattern runs without a prefilter, which costs speed only. A literal
it does answer must be in every match, or matches would be lost: the tests pin that.
A pattern with alternation has no one such literal; `required_alternatives` finds a
few strings one of which every match holds, for the common shapes (`a|b`, `x (a|b)`).
"""

from __future__ import annotations

import re

from app.fs.search.expansion import COUNT, class_end

_PUNCT = frozenset("\\.+*?()|[]{}^$-/#&~,:;<>=!@%'\"`_ ")
START_FLAGS = re.compile(r"\(\?([imsU]+)\)")
_UNSURE = -1  # an atom or quantifier the scan does not read: no literal


def _skip_group(p: str, i: int) -> int | None:
    """Index after the group starting at p[i] == '(', or None when unsure."""
    depth = 0
    j = i
    while j < len(p):
        c = p[j]
        if c == "\\":
            if j + 1 < len(p) and p[j + 1] == "Q":
                return None
            j += 2
            continue
        if c == "[":
            end = class_end(p, j)
            if end is None:
                return None
            j = end
            continue
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return j + 1
        j += 1
    return None


def _atom(p: str, i: int) -> tuple[str | None, int]:
    """The atom at p[i]: (its literal character or None, index after it); index
    `_UNSURE` when the scan does not read it."""
    c = p[i]
    if c == "\\":
        if i + 1 >= len(p):
            return None, _UNSURE
        e = p[i + 1]
        if e in _PUNCT:
            return e, i + 2
        if e.isalpha() and e in "wWdDsSbBAzaftrv":
            return None, i + 2
        return None, _UNSURE  # \x.., \p{..}, \Q, octal, ...: not worth parsing
    if c == "[":
        end = class_end(p, i)
        return None, _UNSURE if end is None else end
    if c == "(":
        if p.startswith("(?", i) and not p.startswith(("(?:", "(?P<"), i):
            return None, _UNSURE  # a flag change mid-pattern
        end = _skip_group(p, i)
        return None, _UNSURE if end is None else end
    if c in ".^$":
        return None, i + 1
    if c in ")]}*+?{":
        return None, _UNSURE  # a quantifier here belongs to something already handled
    return c, i + 1


def _quantifier(p: str, i: int) -> tuple[bool, bool, int]:
    """The quantifier at p[i], if any: (allows zero, repeats, index after it);
    index `_UNSURE` when the scan does not read it."""
    if i >= len(p) or p[i] not in "*?+{":
        return False, False, i
    if p[i] == "{":
        qm = COUNT.match(p, i)
        if qm is None:
            return False, False, _UNSURE
        optional = int(qm.group(1)) == 0
        i = qm.end()
    else:
        optional = p[i] in "*?"
        i += 1
    if i < len(p) and p[i] == "?":
        i += 1  # lazy
    return optional, True, i


def top_atoms(p: str, i: int) -> list[tuple[int, int, str | None, bool, bool]] | None:
    """Each top-level atom of p[i:] with its quantifier: (start, end, literal character
    or None, allows zero, repeats); None when the scan does not read one of them."""
    out: list[tuple[int, int, str | None, bool, bool]] = []
    while i < len(p):
        start = i
        lit, i = _atom(p, i)
        if i == _UNSURE:
            return None
        optional, repeated, i = _quantifier(p, i)
        if i == _UNSURE:
            return None
        out.append((start, i, lit, optional, repeated))
    return out


def required_literal(pattern: str) -> tuple[str, bool] | None:
    """A string every match contains, and whether the pattern folds case; None when unsure.

    Conservative by design: a pattern with `|`, `\\Q`, a flag change after the start,
    or anything this scan does not recognise has none. Only literal characters at
    the top level count, and one followed by a quantifier that allows zero is dropped.
    """
    fold = False
    i = 0
    m = START_FLAGS.match(pattern)
    if m:
        fold = "i" in m.group(1)
        i = m.end()
    if "|" in pattern:
        return None
    atoms = top_atoms(pattern, i)
    if atoms is None:
        return None
    runs: list[str] = []
    run: list[str] = []
    for _, _, lit, optional, repeated in atoms:
        if lit is not None and not optional:
            run.append(lit)
        if run and (lit is None or optional or repeated):
            runs.append("".join(run))
            run.clear()
    if run:
        runs.append("".join(run))
    if not runs:
        return None
    return max(runs, key=lambda r: len(r.encode("utf-8"))), fold


_PLAIN_WORD = re.compile(r"[^\\.+*?()\[\]{}^$|]+")


def plain_words(group: str) -> list[str] | None:
    """The alternatives of `(a|b)` or `(?:a|b)` when each is plain text, else None."""
    inner = group[3:-1] if group.startswith("(?:") else group[1:-1]
    if inner.startswith("?"):
        return None  # a named group or a flag change
    words = inner.split("|")
    return words if all(_PLAIN_WORD.fullmatch(w) for w in words) else None


def required_alternatives(pattern: str) -> list[str] | None:
    """Strings one of which every match contains, for a pattern whose only alternation is
    one group of plain words, or all of it: the literal run right before the group joined
    to each word (`\\bvalue (error|path)` holds "value error" or "value path"). None when
    unsure, when the pattern folds case, or when one of them is under 3 bytes."""
    if "|" not in pattern or "\\|" in pattern or pattern.startswith("(?"):
        return None  # no alternation, an escaped bar, or flags: not this scan's business
    top = pattern.split("|")
    if all(_PLAIN_WORD.fullmatch(w) for w in top):
        found: list[str] | None = top
    else:
        found = None
        run: list[str] = []
        atoms = top_atoms(pattern, 0)
        if atoms is None:
            return None
        for start, i, lit, optional, repeated in atoms:
            if pattern[start] == "(" and "|" in pattern[start:i]:
                words = plain_words(pattern[start:i].rstrip("*+?{}0123456789,"))
                if words is None or optional or found is not None:
                    return None
                if pattern.count("|") != len(words) - 1:
                    return None  # another bar elsewhere
                found = ["".join(run) + w for w in words]
            if lit is None or optional or repeated:
                run.clear()
            else:
                run.append(lit)
    if found is None or min(len(w.encode("utf-8")) for w in found) < 3:
        return None
    return found

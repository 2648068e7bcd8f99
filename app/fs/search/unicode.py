"""`\\w`, `\\d`, `\\s` and `\\b` as ripgrep reads them (Unicode), written for RE2 (ASCII).

RE2's Perl classes are ASCII; ripgrep's regex crate reads them by Unicode properties. So
before RE2 compiles a pattern, `unicode_pattern` writes each one out as the Unicode class
ripgrep means, reading the pattern as RE2 does where it matters (escapes, `\\Q..\\E`,
classes with their POSIX items and braced escapes: `expansion.class_end`), never by text
substitution:

- `\\w`: letters, marks, decimal digits, letter numbers, connector punctuation, the two
  joiners and the letter-like symbols (circled letters) of `Alphabetic`; `\\d`: `\\p{Nd}`;
  `\\s`: `White_Space` (so `\\v` and the Unicode spaces). Outside a class and inside one.
  `\\W`, `\\S` inside a class: `[x\\W]` becomes `(?:[x]|[^\\w…])` (a class is a union);
  inside a negated class they stay ASCII (RE2 has no class intersection).
- `\\b` has no Unicode form in RE2 (it needs to look behind and ahead). At the ends of a
  pattern without alternation, next to an atom known to be a word character or not (a
  literal, `\\w`, `\\d`, `\\s`, a class of ASCII letters and digits, a group of plain
  words), it is rewritten as the character it requires before or after (`\\bfoo\\b` →
  `(?:^|[^\\w…])foo(?:[^\\w…]|$)`): a line matches iff it matched, the reported match
  start moving at most one character left, on the same line. Any other `\\b` or `\\B`
  leaves every one of them RE2's ASCII boundary (`ascii_boundaries`): a documented
  difference (`docs/tools.md`), pinned by tests.

Checked against ripgrep code point by code point (`tests/fs/search/test_unicode.py`).
"""

from __future__ import annotations

import re
import unicodedata

from app.fs.search.expansion import class_end
from app.fs.search.required import START_FLAGS, plain_words, top_atoms

# ripgrep's \w (Alphabetic, M, Nd, Pc, Join_Control): Alphabetic is L, Nl and
# Other_Alphabetic, whose characters outside M are the circled and squared letters.
WORD = (r"\x{24B6}-\x{24E9}\x{1F130}-\x{1F149}\x{1F150}-\x{1F169}\x{1F170}-\x{1F189}"
        r"\x{200C}\x{200D}\p{L}\p{M}\p{Nd}\p{Nl}\p{Pc}")
SPACE = r"\t\x0B\f\r \x{85}\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}"
_OUT = {"w": f"[{WORD}]", "W": f"[^{WORD}]", "d": r"\p{Nd}", "D": r"\P{Nd}",
        "s": f"[{SPACE}]", "S": f"[^{SPACE}]"}
_IN = {"w": WORD, "d": r"\p{Nd}", "D": r"\P{Nd}", "s": SPACE}  # \W, \S: see _class
_BRACED = re.compile(r"\\[pPx]\{[^}]*\}|\\[pP][A-Za-z]")
_ASCII_WORD_CLASS = re.compile(r"\[(?:[a-z](?:-[a-z])?|[A-Z](?:-[A-Z])?|[0-9](?:-[0-9])?"
                               r"|_|\\[wd])+\]")
_CIRCLED = ((0x24B6, 0x24E9), (0x1F130, 0x1F149), (0x1F150, 0x1F169), (0x1F170, 0x1F189))


def is_word(ch: str) -> bool:
    """Whether ripgrep's `\\w` matches `ch` (for the characters Python's tables know)."""
    cat = unicodedata.category(ch)
    o = ord(ch)
    return (cat[0] in "LM" or cat in ("Nd", "Nl", "Pc") or o in (0x200C, 0x200D)
            or any(lo <= o <= hi for lo, hi in _CIRCLED))


def unicode_pattern(p: str) -> str:
    """`p` with ripgrep's meaning of `\\w \\W \\d \\D \\s \\S` (and `\\b` where it can be
    written, `_boundaries`) spelled for RE2."""
    return _classes(_boundaries(p))


def ascii_boundaries(p: str) -> bool:
    """Whether `p`'s `\\b`/`\\B` stay RE2's ASCII boundaries (none of them is rewritten)."""
    return bool(_escapes(_boundaries(p), "bB"))


def _escapes(p: str, letters: str) -> list[int]:
    """Where `\\x` for x in `letters` stands outside classes and `\\Q..\\E` in `p`."""
    found, i, n = [], 0, len(p)
    while i < n:
        if p.startswith("\\Q", i):
            end = p.find("\\E", i + 2)
            i = n if end < 0 else end + 2
        elif p[i] == "\\":
            if p[i + 1:i + 2] and p[i + 1] in letters:
                found.append(i)
            i += 2
        elif p[i] == "[":
            close = class_end(p, i)
            i = n if close is None else close
        else:
            i += 1
    return found


def _classes(p: str) -> str:
    out: list[str] = []
    i, n = 0, len(p)
    while i < n:
        c = p[i]
        if p.startswith("\\Q", i):
            end = p.find("\\E", i + 2)
            end = n if end < 0 else end + 2
            out.append(p[i:end])
            i = end
        elif c == "\\":
            m = _BRACED.match(p, i)
            j = m.end() if m else i + 2
            out.append(_OUT.get(p[i + 1:j], p[i:j]))
            i = j
        elif c == "[":
            close = class_end(p, i)
            if close is None:  # unclosed, or holds \Q: RE2 reads the rest
                out.append(p[i:])
                break
            out.append(_class(p[i:close]))
            i = close
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _class(cls: str) -> str:
    """One bracketed class with its Perl classes written out."""
    negated = cls.startswith("[^")
    j = 2 if negated else 1
    items: list[str] = [cls[:j]]
    if cls[j:j + 1] == "]":
        items.append("]")
        j += 1
    outside: list[str] = []  # \W, \S of a positive class: alternatives beside it
    end = len(cls) - 1
    while j < end:
        if cls[j] == "\\":
            m = _BRACED.match(cls, j)
            k = m.end() if m else j + 2
            e = cls[j + 1:k]
            if e in ("W", "S") and not negated:
                outside.append(_OUT[e])
            else:  # in a negated class \W, \S stay RE2's (ASCII)
                items.append(_IN.get(e, cls[j:k]))
            j = k
        elif cls.startswith("[:", j) and (k := cls.find(":]", j + 2)) >= 0:
            items.append(cls[j:k + 2])
            j = k + 2
        else:
            items.append(cls[j])
            j += 1
    body = "".join(items) + "]"
    if not outside:
        return body
    return "(?:" + "|".join(([body] if len(items) > 1 else []) + outside) + ")"


def _wordness(atom: str, lit: str | None, last: bool) -> bool | None:
    """Whether the character at the start (`last`: the end) of what `atom` matches is
    surely a word character (True), surely not (False), or either (None)."""
    if lit is not None:
        return is_word(lit)
    body = atom.rstrip("*+?") if not atom.endswith("}") else atom[:atom.rfind("{")]
    if body in ("\\w", "\\d"):
        return True
    if body in ("\\s", "\\W"):
        return False
    if _ASCII_WORD_CLASS.fullmatch(body):
        return True
    if body.startswith("(") and (words := plain_words(body)) is not None and all(words):
        kinds = {is_word(w[-1] if last else w[0]) for w in words}
        return kinds.pop() if len(kinds) == 1 else None
    return None


def _boundaries(p: str) -> str:
    """`p` with its `\\b`s written as the characters they require, when each of them can be
    (`unicode_pattern`); else `p` unchanged."""
    if not _escapes(p, "bB"):
        return p
    m = START_FLAGS.match(p)
    head = m.end() if m else 0
    atoms = top_atoms(p, head)
    if atoms is None or len(atoms) < 2 or any(a[2] == "|" for a in atoms) or "\\B" in p:
        return p
    first = 1 if p[atoms[0][0]:atoms[0][1]] == "^" else 0
    last = len(atoms) - 2 if p[atoms[-1][0]:atoms[-1][1]] == "$" else len(atoms) - 1
    edits: dict[int, str] = {}  # atom index: its replacement
    for k, lead in ((first, True), (last, False)):
        start, end = atoms[k][:2]
        if p[start:end] != "\\b" or k in edits:
            continue
        n = k + 1 if lead else k - 1
        if not 0 <= n < len(atoms) or atoms[n][3] or p[atoms[n][0]:atoms[n][1]] in "^$":
            return p
        word = _wordness(p[atoms[n][0]:atoms[n][1]], atoms[n][2], last=not lead)
        anchored = (first == 1) if lead else (last < len(atoms) - 1)
        if word is None or (anchored and not word):
            return p
        if anchored:
            edits[k] = ""  # at a line's edge \b only asks for a word character: it is one
        elif lead:
            edits[k] = f"(?:^|[^{WORD}])" if word else f"[{WORD}]"
        else:
            edits[k] = f"(?:[^{WORD}]|$)" if word else f"[{WORD}]"
    if len(edits) != len(_escapes(p, "b")):
        return p  # a \b elsewhere: none is rewritten
    out = [p[:head]]
    for k, (start, end, *_) in enumerate(atoms):
        out.append(edits.get(k, p[start:end]))
    return "".join(out)

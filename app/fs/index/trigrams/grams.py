"""The planner: from the strings every match holds to a query of the trigram index.

A search's side says what every match holds (`app.fs.search.needs`: one of a few strings,
in some case when it folds). Every match then holds all the trigrams (three characters) of
one of them, so the files to read are those whose text holds all of one string's trigrams:
an OR of ANDs. The index folds case (SQLite's `trigram` tokenizer, `case_sensitive 0`), so
a query with case asks the folded trigrams too: a file holding the string holds them.

Folding is where a wrong answer would hide. SQLite folds one code point to one; Unicode's
case orbits are wider (K, KELVIN SIGN U+212A and k; s, LONG S U+017F and S). So a query
without case keeps only the runs of its strings made of ASCII characters other than k and s
(whose every case variant is ASCII, and folds as SQLite folds it), and asks their trigrams.
A string with no trigram left (under 3 such characters in a row) cannot narrow: `plan`
answers None and the call scans every file.

At most `MOST_PER_STRING` trigrams of one string are asked (spread over it), which bounds
the query. Asking fewer costs little less and narrows much less: on the 1 GB corpus of
docs/measured.md, 12 of the 25 trigrams of `object is not subscriptable` left 1,178
candidate files, all 25 left 196, for 17 ms against 20 ms of SQLite.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

MOST_PER_STRING = 32
_FOLD_BREAKS = re.compile(r"[^\x01-\x7f]|[kKsS]")  # where a folded string's trigrams stop
_TERM = re.compile(r'"((?:[^"]|"")*)"|\) OR \(')  # a quoted trigram, or the next AND


def trigrams(text: str) -> list[str]:
    """The distinct trigrams of `text`, in order; none holding NUL or a lone surrogate."""
    seen: dict[str, None] = {}
    for i in range(len(text) - 2):
        gram = text[i:i + 3]
        if "\0" in gram or any("\ud800" <= c <= "\udfff" for c in gram):
            continue
        seen.setdefault(gram.lower() if gram.isascii() else gram, None)
    return list(seen)


def _spread(grams: list[str], most: int) -> list[str]:
    if len(grams) <= most:
        return grams
    step = (len(grams) - 1) / (most - 1)
    return [grams[round(i * step)] for i in range(most)]


def string_grams(s: str, fold: bool) -> list[str]:
    """The trigrams a file holding `s` (in some case, when `fold`) holds in the index."""
    pieces = _FOLD_BREAKS.split(s) if fold else [s]
    grams: list[str] = []
    for piece in pieces:
        grams.extend(g for g in trigrams(piece) if g not in grams)
    return _spread(grams, MOST_PER_STRING)


def quote(gram: str) -> str:
    return '"' + gram.replace('"', '""') + '"'


class Plan(str):
    """A query `plan` made (an FTS5 expression), with the length of each of its strings:
    a string no longer than a part's overlap lies whole in one part of a file
    (`trigram_text`), so the query finds it without asking its trigrams one at a time."""

    lengths: tuple[int, ...]


def plan(strings: Sequence[str], fold: bool) -> Plan | None:
    """An FTS5 query matching every file that holds one of `strings`, or None when one of
    them has no trigram to ask (the index cannot narrow)."""
    ors: list[str] = []
    lengths: list[int] = []
    for s in dict.fromkeys(strings):
        grams = string_grams(s, fold)
        if not grams:
            return None
        ors.append("(" + " AND ".join(quote(g) for g in grams) + ")")
        lengths.append(len(s))
    if not ors:
        return None
    made = Plan(" OR ".join(ors))
    made.lengths = tuple(lengths)
    return made


def groups(expr: str) -> list[list[str]]:
    """The trigrams of each AND of a query `plan` made, in order (its inverse; the lengths
    of its strings are not in the text)."""
    out: list[list[str]] = [[]]
    for m in _TERM.finditer(expr):
        if m.group(1) is None:
            out.append([])
        else:
            out[-1].append(m.group(1).replace('""', '"'))
    return out

"""Code-aware words for ranked search: what the index stores and a query asks for.

A word is a run of letters, digits and `_` (Python's `\\w`). A compound
identifier is kept whole *and* followed by its parts, split at `_`, at case
changes and between letters and digits: `parseHTTPResponse_v2` becomes
`parseHTTPResponse_v2 parse HTTP Response v 2`. So a query for `http response`
finds it (even as a phrase), and so does `parseHTTPResponse_v2`. SQLite's
`unicode61` tokenizer (with `_` as a token character) then lower-cases and
strips diacritics, the same way for text and query.

The title of a file is what a person would call it: a Markdown or plain-text
file's first line, a Python module's docstring's first line, an HTML `<title>`.
"""

from __future__ import annotations

import codecs
import re
import threading

from app.fs.text import textio

WORD = re.compile(r"\w+")
_PIECES = re.compile(r"(\w+)")  # split() keeps the words at odd positions
_PART = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+|[^\W\d_]+")
# The same split for a word with other letters, run over the word's classes: upper case
# (and title case) A, lower case a, a digit 0, `_`, any other letter x (no case: 漢, ا).
_CLASS_PART = re.compile(r"A+(?=Aa)|A?a+|A+|0+|[Aax]+")
LONGEST_WORD = 256  # characters; a longer word is not indexed
# The cache of words already split, bounded in words and in characters (a file of distinct
# long identifiers must not grow it past a few MiB); full, it starts over.
_CACHE_WORDS = 1 << 15
_CACHE_CHARS = 1 << 20
_expanded: dict[str, str] = {}  # compound word -> "word part part ..."
_seen: set[str] = set()  # words already looked at (compound or not)
_held = 0  # characters held by the two
_lock = threading.Lock()  # searches of several roots run in several threads


_MOST_CLASSED = 1 << 16


class _Classes(dict[int, str]):
    """Code point -> its class letter, for `str.translate`, each code point classed on
    first sight and kept while fewer than `_MOST_CLASSED` are (then classed every time)."""

    def __missing__(self, code: int) -> str:
        c = chr(code)
        got = ("0" if c.isdecimal() else "_" if c == "_" else
               "A" if c.isupper() or c.istitle() else "a" if c.islower() else "x")
        if len(self) < _MOST_CLASSED:
            self[code] = got
        return got


_CLASSES = _Classes()


def _split(word: str) -> list[str]:
    """`parseHTTPResponse` -> parse, HTTP, Response: by `_PART` in C for an ASCII word;
    else by its classes, so `größeBerechnen` gives größe, Berechnen as
    `sizeCompute` gives size, Compute."""
    if word.isascii() or word.lower() == word.upper():  # no case (漢字): `_PART` splits alike
        return _PART.findall(word)
    classes = word.translate(_CLASSES)
    return [word[m.start():m.end()] for m in _CLASS_PART.finditer(classes)]


def parts(word: str) -> list[str]:
    """The pieces of one identifier (a single piece when it does not split)."""
    return _split(word) or [word]


def expand(text: str) -> str:
    """`text` with every compound identifier followed by its parts, and every word longer
    than LONGEST_WORD replaced by a space (not indexed: `prepare`).

    Split once in C, look each piece up in a dict: about a fifth faster than a
    `re.sub` callback per word, which matters on a first build."""
    global _expanded, _seen, _held
    pieces = _PIECES.split(text)
    with _lock:
        if len(_seen) >= _CACHE_WORDS or _held >= _CACHE_CHARS:
            # Start over: new objects, so a reader holding the old ones is not disturbed.
            # One call adds at most its text's words: the index passes a window at a time.
            _expanded, _seen, _held = {}, set(), 0
        expanded, seen = _expanded, _seen
        for w in set(pieces[1::2]) - seen:
            if len(w) > LONGEST_WORD:
                expanded[w] = " "
            else:
                ps = _split(w)
                if len(ps) > 1 or (ps and ps[0] != w):
                    expanded[w] = f"{w} {' '.join(ps)}"
                    _held += 2 * len(w)
            seen.add(w)
            _held += len(w)
    get = expanded.get
    return "".join([get(p, p) for p in pieces])


def query_words(query: str) -> list[str]:
    """The query's words, lower-cased, each once, in order."""
    return list(dict.fromkeys(w.lower() for w in WORD.findall(query)))


def query_terms(query: str) -> list[str]:
    """What a query looks for: each word, and the parts of each compound word."""
    # lower(), not casefold(): the index folds case the way SQLite does (`ß` stays `ß`).
    out: dict[str, None] = {}
    for w in WORD.findall(query):
        out[w.lower()] = None
        ps = parts(w)
        if len(ps) > 1 or ps[0] != w:
            out.update((p.lower(), None) for p in ps)
    return list(out)


_SUFFIX = re.compile(r"(?<=\w\w\w)(?:s|es|ing|ed)$")
STEM_MIN = 4


def stems(words: list[str]) -> list[str]:
    """Plain-English stems of the query's words, for prefix matching: `invoice`,
    `invoices` and `invoiced` all give `invoic`, which begins each of them; a stem
    shorter than STEM_MIN gives nothing. Crude on purpose: it only adds candidates,
    ranked by BM25 like the rest, and a whole-word match scores more."""
    out: dict[str, None] = {}
    for w in words:
        stem = _SUFFIX.sub("", w)
        stem = stem[:-1] if stem.endswith("e") else stem
        if len(stem) >= STEM_MIN and stem.isalpha():
            out[stem] = None
    return list(out)


# Blank and comment lines, then the docstring's quotes. Each line is matched one way only
# (with `\s*` on both sides of `\n`, 40 blank lines could be split 2^40 ways before a miss).
_PY_DOC = re.compile(r"\A(?:[^\S\n]*(?:#[^\n]*)?\n)*[^\S\n]*[rRuUbB]?(?:\"\"\"|''')\s*([^\n]*)")
_HTML_TITLE = re.compile(r"<title[^>]*>([^<]{1,300})</title>", re.IGNORECASE)
_TEXTY = {"", "md", "markdown", "rst", "txt", "adoc", "org", "text"}
TITLE_CHARS = 300


def title_of(rel: str, text: str) -> str:
    name = rel.rsplit("/", 1)[-1]
    ext = name.rsplit(".", 1)[-1].lower() if "." in name else ""
    head = text[:8192]
    line = ""
    if ext in ("py", "pyi"):
        m = _PY_DOC.match(head)
        line = m.group(1) if m else ""
    elif ext in ("html", "htm"):
        m = _HTML_TITLE.search(head)
        line = m.group(1) if m else ""
    elif ext in _TEXTY:
        for raw in head.splitlines():
            line = raw.strip().strip("#=*-_~` \t")
            if line:
                break
    return line[:TITLE_CHARS]


def as_text(data: bytes, complete: bool) -> tuple[str, str] | None:
    """(text, encoding) as read_text_file decides them (BOM, else UTF-8, else GB18030),
    or None for binary. A read cut short may end inside a character: that part is dropped."""
    sn = textio.sniff(data[: textio.HEAD])
    if sn.binary:
        return None
    enc = textio.decide(sn, [(data[sn.base :], complete)])
    codec = "utf-8" if enc == "utf-8-sig" else enc
    return codecs.getincrementaldecoder(codec)("replace").decode(data[sn.base :], complete), enc

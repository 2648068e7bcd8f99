"""A `search` query, parsed once, for both ways of answering it
(docs/tools.md#ranked-search-and-its-index-search).

The scan (no index) looks for each whitespace-separated word as it is written, case-folded,
punctuation included (`foo.bar` is one word there), and for the whole query as a phrase.
The index looks for code-aware words (`tokens.py`): each word of letters, digits and `_`,
the parts of a compound identifier, and crude stems for prefix matches. Both come from one
`Query`, built by `parse()` when the call starts, so the argument errors are the same either
way and no layer tokenizes the text again.
"""

from __future__ import annotations

from dataclasses import dataclass

from app.errors import BadArgument
from app.fs.index.fulltext import tokens

MAX_WORDS = 32


@dataclass(frozen=True)
class Query:
    text: str
    scan_words: tuple[str, ...]  # what the scan counts: whitespace words, case-folded
    phrase: str  # the whole query, spaces folded, case-folded
    words: tuple[str, ...]  # the index's words, lower-cased, each once
    terms: tuple[str, ...]  # the words and the parts of each compound word
    stems: tuple[str, ...]  # prefixes for other forms of the words

    @property
    def literal_only(self) -> bool:
        """Only punctuation: the index has no word for it, the scan matches it literally."""
        return not self.terms


def parse(text: str) -> Query:
    """The query as both ways read it; refused when empty or longer than MAX_WORDS words."""
    split = list(dict.fromkeys(w.casefold() for w in text.split()))
    if not split:
        raise BadArgument("query is empty: give one or more words to look for")
    if len(split) > MAX_WORDS:
        raise BadArgument(f"query has {len(split)} distinct words; at most {MAX_WORDS}")
    # One-letter words match nearly everything; kept only if nothing else is left.
    scan_words = [w for w in split if len(w) > 1] or split
    words = tokens.query_words(text)
    return Query(
        text=text,
        scan_words=tuple(scan_words),
        phrase=" ".join(text.split()).casefold(),
        words=tuple(words),
        terms=tuple(tokens.query_terms(text)),
        stems=tuple(tokens.stems(words)),
    )

"""What a search answers: one page of file names, or of matching lines, files or counts.

Both page alike (`app.fs.text.paging`): `offset` and `limit` pick the page, `has_more` and
`next_offset` continue it, `truncated` says the search stopped before the end of the tree
and `note` why, and how to narrow it. Items stay dicts until the result is built: pydantic
validates them, cheaper than a model each.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field


def _absent(value: object) -> bool:
    return value is None


# Defaults say what a field left out of the structured content means (`app.tools.lean`).
class FileMatch(BaseModel):
    path: str
    type: str = "file"
    size: int | None = None


class TextMatch(BaseModel):
    path: str
    line: int
    preview: str
    # Only with context > 0: the lines before and after that no neighbouring match shows.
    before: list[str] | None = Field(default=None, exclude_if=_absent)
    after: list[str] | None = Field(default=None, exclude_if=_absent)


class FileCount(BaseModel):
    path: str
    count: int  # matching lines, as `rg -c` counts


FILES_LIMIT = 100  # matches a page of search_files holds unless the call asks otherwise
TEXT_LIMIT = 50  # and of search_text


class _Page(BaseModel):
    offset: int = 0
    limit: int  # the value used, after max_search_results clamped it
    returned: int
    has_more: bool = False
    next_offset: int | None = None
    truncated: bool = False
    note: str | None = None


class SearchFilesResult(_Page):
    limit: int = FILES_LIMIT
    matches: list[FileMatch]
    next_cursor: str | None = None  # where the next page resumes (`cursor`)
    examined_entries: int
    skipped_links: int = 0


class SearchTextResult(_Page):
    limit: int = TEXT_LIMIT
    # One of the three, by output_mode: content, files_with_matches, count.
    matches: list[TextMatch] | None = Field(default=None, exclude_if=_absent)
    files: list[str] | None = Field(default=None, exclude_if=_absent)
    counts: list[FileCount] | None = Field(default=None, exclude_if=_absent)
    # Where the next page resumes (`cursor`): set whenever there is one.
    next_cursor: str | None = None
    examined_files: int
    scanned_bytes: int
    skipped_too_large: int = 0
    skipped_binary: int = 0
    skipped_links: int = 0


def page_fields(offset: int, limit: int, n: int, more: bool, notes: list[str | None]
                ) -> dict[str, Any]:
    """The fields every page has, for a page of `n` items (`more`: items follow it)."""
    return dict(
        offset=offset, limit=limit, returned=n, has_more=more,
        next_offset=offset + n if more else None, note="; ".join(x for x in notes if x) or None,
    )

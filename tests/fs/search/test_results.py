"""The pages a search answers: the fields every page has, and the one list a text search
shows (matches, files or counts) with nothing empty around it."""

from __future__ import annotations

import pytest

from app.fs.search.results import SearchTextResult, TextMatch, page_fields


@pytest.mark.parametrize(("offset", "n", "more", "next_offset"), [
    (0, 10, True, 10), (30, 5, True, 35), (30, 5, False, None), (0, 0, False, None),
])
def test_a_page_continues_exactly_after_its_last_item(offset: int, n: int, more: bool,
                                                      next_offset: int | None) -> None:
    fields = page_fields(offset, 50, n, more, [])
    assert (fields["returned"], fields["has_more"], fields["next_offset"]) == (
        n, more, next_offset)


@pytest.mark.parametrize(("notes", "note"), [
    ([], None), ([None, None], None), (["a"], "a"), ([None, "a", None, "b"], "a; b"),
])
def test_the_notes_are_joined_and_none_is_no_note(notes: list[str | None],
                                                  note: str | None) -> None:
    assert page_fields(0, 1, 0, False, notes)["note"] == note


def test_a_text_page_shows_only_the_list_of_its_output_mode() -> None:
    common = dict(page_fields(0, 5, 1, False, []), truncated=False, examined_files=1,
                  scanned_bytes=3, skipped_too_large=0, skipped_binary=0, skipped_links=0)
    files = SearchTextResult(files=["a.txt"], **common).model_dump(mode="json")
    assert files["files"] == ["a.txt"] and "matches" not in files and "counts" not in files
    plain = TextMatch(path="a.txt", line=1, preview="x").model_dump(mode="json")
    assert plain == {"path": "a.txt", "line": 1, "preview": "x"}  # no context: no keys
    around = TextMatch(path="a", line=2, preview="x", before=["w"], after=[])
    assert around.model_dump(mode="json")["after"] == []  # asked for, and none: shown empty

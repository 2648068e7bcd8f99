"""The options of a search: built once, checked as they are built, frozen afterwards."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from app.errors import BadArgument
from app.fs.search.options import MAX_EXCLUDE, FilesOptions, TextOptions


def text(**kw: Any) -> TextOptions:
    args: dict[str, Any] = dict(query="x", limit=10, cap=1 << 20, file_limit=1 << 20,
                                budget=1 << 20)
    args.update(kw)
    return TextOptions(**args)


REFUSED = [
    # the query
    (dict(query=""), "query must not be empty"),
    (dict(query="x" * 1001), "query is longer than 1000 characters"),
    # what a page shows
    (dict(context=-1), "context must be between 0 and 10 lines"),
    (dict(context=11), "context must be between 0 and 10 lines"),
    (dict(output_mode="lines"), "output_mode must be one of content, files_with_matches, count"),
    # the globs, each compiled before anything is opened
    (dict(file_glob="/etc/*"), "absolute patterns are not accepted"),
    (dict(file_glob="a//b"), "empty segment"),
    (dict(exclude=["ok", "../x"]), "'..' is not accepted"),
    (dict(exclude=["x"] * (MAX_EXCLUDE + 1)), f"exclude takes at most {MAX_EXCLUDE} globs"),
    # in a fixed order: the query first, then context, then the globs
    (dict(query="", context=11, file_glob="a//b"), "query must not be empty"),
    (dict(context=11, file_glob="a//b"), "context must be between"),
    # the number of globs before any of them is compiled (a long list costs nothing)
    (dict(exclude=["a//b"] * (MAX_EXCLUDE + 1)), "exclude takes at most"),
]


@pytest.mark.parametrize(("kw", "why"), REFUSED)
def test_a_bad_argument_is_refused_as_the_options_are_built(kw: dict[str, Any],
                                                             why: str) -> None:
    with pytest.raises(BadArgument, match=why.replace("(", r"\(").replace(".", r"\.")):
        text(**kw)


def test_search_files_options_check_their_pattern_and_excludes() -> None:
    with pytest.raises(BadArgument, match="empty segment"):
        FilesOptions(pattern="a//b", limit=1, cap=100)
    with pytest.raises(BadArgument, match="at most 64"):
        FilesOptions(pattern="*", exclude=["x"] * 65, limit=1, cap=100)
    assert FilesOptions(pattern="*.py", limit=1, cap=100).path == ""


def test_options_are_frozen_and_keep_no_list_of_the_caller() -> None:
    given = ["vendor", "*.min.js"]
    opts = text(exclude=given)
    given.append("src")  # the caller's list, changed afterwards
    assert opts.exclude == ("vendor", "*.min.js")
    with pytest.raises(dataclasses.FrozenInstanceError):
        opts.query = "y"  # type: ignore[misc]


def test_the_defaults_are_the_tools_defaults() -> None:
    opts = text()
    assert (opts.path, opts.file_glob, opts.case_sensitive, opts.regex, opts.context,
            opts.output_mode, opts.exclude, opts.no_ignore, opts.offset) == (
        "", "*", True, False, 0, "content", (), False, 0)


@pytest.mark.parametrize(("offset", "limit"), [(0, 1), (0, 50), (7, 3), (10**9, 100_000)])
def test_a_search_wants_one_item_more_than_its_page(offset: int, limit: int) -> None:
    # The one past the page is how a search knows there is more (`has_more`).
    assert text(offset=offset, limit=limit).want == offset + limit + 1

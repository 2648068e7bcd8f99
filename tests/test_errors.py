"""The refusal family (app/errors.py): a refusal that always says the same has it as `default`."""

from __future__ import annotations

import pytest

from app.errors import (
    BadArgument,
    EscapesRoot,
    FileChanged,
    IsSymlink,
    LoomError,
    NotADirectory,
    NotARegularFile,
    NotFound,
    SymlinkLoop,
)


@pytest.mark.parametrize(
    ("cls", "text", "rule"),
    [
        (EscapesRoot, "path escapes the root", "confinement"),
        (SymlinkLoop, "too many levels of symbolic links", "confinement"),
        (NotARegularFile, "not a regular file", "type"),
        (NotADirectory, "not a directory", "type"),
        (IsSymlink, "is a symbolic link", "type"),
        (FileChanged, "file changed since it was read", "changed"),
    ],
)
def test_a_fixed_refusal_says_its_text(cls: type[LoomError], text: str, rule: str) -> None:
    err = cls()
    assert (err.message, str(err), err.rule) == (text, text, rule)
    assert cls("something else").message == "something else"


@pytest.mark.parametrize("cls", [LoomError, BadArgument, NotFound])
def test_a_refusal_without_a_fixed_text_needs_one(cls: type[LoomError]) -> None:
    with pytest.raises(TypeError, match="needs a message"):
        cls()
    assert cls("why").message == "why"

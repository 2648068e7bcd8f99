"""Cursors spoilt as a client could spoil them: the table both searches refuse."""

from __future__ import annotations

from collections.abc import Callable


def flip(text: str, at: int) -> str:
    return text[:at] + ("A" if text[at] != "A" else "B") + text[at + 1:]


# Each turns a cursor the search gave into one it must refuse (the count fields are
# each search's own: their rows stay in its test).
SPOILT: list[Callable[[str], str]] = [
    lambda c: "x",
    lambda c: ".",
    lambda c: "...",
    lambda c: c + "=",
    lambda c: flip(c, 0),  # the MAC
    lambda c: flip(c, len(c) - 2),  # the path
    lambda c: c.split(".", 1)[0] + ".0.0.Li4",  # '..', unsigned
    lambda c: c[: len(c) // 2],
    lambda c: c * 40,  # too long
    lambda c: "é" + c,
    lambda c: c.replace(".", "\0", 1),
]

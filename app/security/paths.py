"""Syntax checks on request paths, done before anything touches the disk.

A request path is relative to a root and `/`-separated; `""` and `.` are the
root. `..` is resolved lexically: climbing above the root is refused here,
and nothing that reaches the disk ever contains `..`. `~` is a plain name.

Nor does anything that merely *reads* as `.` or `..` reach the disk: a
component made only of dots and spaces once zero-width characters are dropped
and NFKC applied (`..\u200b`, `.. `, `...`, fullwidth dots). HFS+ ignores the
zero-width characters and Windows strips trailing dots and spaces, so such a
name can mean the parent there; on Linux it is a legal but odd name, and
refusing it is the safe side.
"""

from __future__ import annotations

import re
import unicodedata

from app.errors import EscapesRoot, InvalidPath, TooDeep
from app.security.deny import IGNORABLE

MAX_COMPONENT_BYTES = 255
MAX_PATH_CHARS = 4096
# The deepest path, in components below the root, that the server makes or moves into place
# (create, write, move, copy, restore): walks carry one handle per level, so depth is what
# bounds a walk's descriptors and the cost of every later call on what an agent has built.
# Trees already deeper on disk are read as they are (listings stop at the same depth).
MAX_DEPTH = 64

_DRIVE = re.compile(r"^[A-Za-z]:")
# C0 controls, DEL and C1 controls: none has a place in a file name an agent types.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def split_request(path: str) -> tuple[str, ...]:
    """Validate a client path and return its normalised components."""
    if not isinstance(path, str):
        raise InvalidPath("must be a string")
    if path in ("", "."):
        return ()
    if len(path) > MAX_PATH_CHARS:
        raise InvalidPath(f"longer than {MAX_PATH_CHARS} characters")
    if "\x00" in path:
        raise InvalidPath("contains a NUL byte")
    if _CONTROL.search(path):
        raise InvalidPath("contains a control character")
    if path.startswith(("//", "\\\\")):
        raise InvalidPath("UNC paths are not accepted; give a path relative to the root")
    if "\\" in path:
        raise InvalidPath("contains a backslash; use '/' as the separator")
    if path.startswith("/"):
        raise InvalidPath("absolute paths are not accepted; give a path relative to the root")
    if _DRIVE.match(path):
        raise InvalidPath("drive letters are not accepted; give a path relative to the root")
    parts: list[str] = []
    for comp in path.split("/"):
        if comp in ("", "."):
            continue
        try:
            size = len(comp.encode("utf-8"))
        except UnicodeEncodeError:
            raise InvalidPath("not valid Unicode") from None
        if size > MAX_COMPONENT_BYTES:
            raise InvalidPath(f"a component is longer than {MAX_COMPONENT_BYTES} bytes")
        if comp == "..":
            if not parts:
                raise EscapesRoot()
            parts.pop()
            continue
        if _reads_as_dots(comp):
            raise InvalidPath(
                f"the component {comp!r} is only dots and spaces (it may read as '.' or '..')"
            )
        parts.append(comp)
    return tuple(parts)


def check_depth(depth: int) -> None:
    """Refuse a path that would lie `depth` components below the root, past `MAX_DEPTH`."""
    if depth > MAX_DEPTH:
        raise TooDeep(
            f"too deep: it would lie {depth} levels below the root; "
            f"the server makes paths at most {MAX_DEPTH} levels deep"
        )


def _reads_as_dots(comp: str) -> bool:
    if comp.isascii():
        return not comp.strip(". ")
    return not unicodedata.normalize("NFKC", comp).translate(IGNORABLE).strip(". ")


def join(parts: tuple[str, ...] | list[str]) -> str:
    return "/".join(parts)

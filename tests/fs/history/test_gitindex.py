"""`.git/index` is read in windows and no entry's path grows past `MAX_NAME`.

A version-4 index stores each path as a cut of the one before plus a suffix,
so a path written in pieces could grow with every entry and each later entry
(63 bytes of file) would hand on a copy of all of it. A path past `MAX_NAME`
is damage: the listing ends there, what came before stands.
"""

from __future__ import annotations

import os
import struct
from pathlib import Path

import pytest

from app.fs.history.gitindex import MAX_NAME, IndexReader

FIXED = bytes(24) + struct.pack(">I", 0o100644) + bytes(32)  # stat data, mode, the rest


def _v4(names: list[tuple[int, bytes]]) -> bytes:
    """A version-4 index of (bytes to cut from the path before, suffix) entries."""
    out = bytearray(b"DIRC" + struct.pack(">II", 4, len(names)))
    for strip, suffix in names:
        assert strip < 0x80
        out += FIXED + struct.pack(">H", min(len(suffix), 0xFFF)) + bytes([strip]) + suffix
        out += b"\0"
    return bytes(out)


def _read(tmp_path: Path, data: bytes) -> tuple[list[bytes], bool]:
    (tmp_path / "index").write_bytes(data)
    fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        reader = IndexReader(fd)
        return [name for name, _, _ in reader.entries()], reader.damaged
    finally:
        os.close(fd)


PIECE = b"d/" * (MAX_NAME // 4)  # half of MAX_NAME


@pytest.mark.parametrize(
    "names",
    [
        [(0, PIECE), (0, PIECE + b"x")],  # two halves and a byte
        [(0, PIECE), (0, PIECE), (0, b"")],  # exactly MAX_NAME, then one more entry on it
        [(0, PIECE)] * 3 + [(0, b"")] * 50,  # later entries each repeating the whole path
        [(0, PIECE[:-1] + b"\x80"), (1, PIECE + b"xy")],
    ],
    ids=["grows-past", "reaches", "repeats", "cut-and-grow"],
)
def test_a_v4_path_never_grows_past_max_name(tmp_path: Path, names: list) -> None:
    got, damaged = _read(tmp_path, _v4(names))
    assert all(len(n) <= MAX_NAME for n in got)
    want = []
    prev = b""
    for strip, suffix in names:
        prev = prev[: len(prev) - strip] + suffix
        if len(prev) > MAX_NAME:
            break
        want.append(prev)
    assert got == want
    assert damaged == (len(want) < len(names))

"""Copies racing onto one destination (docs/tools.md, copy_file): the destination's keys
are held from the first look to the rename, so the calls take turns.

Without `overwrite`, exactly one copy makes a new name and every other is told it exists.
With it, every copy replaces the file whole, and nothing is lost: each content the
destination held (the first, and each copy's but the last) is in a kept version, and the
file holds the last copy's bytes, never a mix. No temp file is left either way.
"""

from __future__ import annotations

import functools
from collections import Counter
from pathlib import Path

from app.fs.change import copy as copy_mod
from app.fs.change.locks import TABLE
from tests.fs.conftest import populated_ws, race, temp_leftovers

ROUNDS = 15
WRITERS = 6
EXISTS = "destination 'dir/shared.txt' already exists; pass overwrite=true to replace it"


def _sources(ws: Path, rnd: int) -> list[bytes]:
    """One source per writer, each of a different size, so a mix would show."""
    got = []
    for i in range(WRITERS):
        data = f"round {rnd} source {i}\n".encode() * (1 + 3000 * i)
        (ws / f"src{i}.txt").write_bytes(data)
        got.append(data)
    return got


def _copy(root, overwrite: bool, out: dict, i: int) -> None:
    out[i] = copy_mod.copy_file(root, f"src{i}.txt", root, "dir/shared.txt",
                                overwrite=overwrite)


def test_copies_onto_one_new_name_have_exactly_one_winner(tmp_path: Path) -> None:
    disk, root = populated_ws(tmp_path)
    target = disk.ws / "dir" / "shared.txt"
    for rnd in range(ROUNDS):
        target.unlink(missing_ok=True)
        sources = _sources(disk.ws, rnd)
        won, refused = race(WRITERS, functools.partial(_copy, root, False, {}))
        assert len(won) == 1, f"round {rnd}: {len(won)} copies were told 'copied'"
        assert refused == [EXISTS] * (WRITERS - 1), refused
        assert target.read_bytes() == sources[won[0]]
    assert temp_leftovers(disk.ws) == []
    assert len(TABLE) == 0


def test_overwriting_copies_onto_one_file_lose_no_content(tmp_path: Path) -> None:
    disk, root = populated_ws(tmp_path)
    target = disk.ws / "dir" / "shared.txt"
    for rnd in range(ROUNDS):
        first = f"round {rnd}: the file as it was\n".encode()
        target.write_bytes(first)
        sources = _sources(disk.ws, rnd)
        out: dict = {}
        won, refused = race(WRITERS, functools.partial(_copy, root, True, out))
        assert refused == [] and sorted(won) == list(range(WRITERS)), refused
        kept = [(disk.ws / out[i].kept_version).read_bytes() for i in won]
        final = target.read_bytes()
        assert final in sources, f"round {rnd}: the file holds no one copy's bytes"
        # Each content the file held was replaced once and kept, but the last one.
        assert Counter([*kept, final]) == Counter([first, *sources]), f"round {rnd}"
    assert temp_leftovers(disk.ws) == []
    assert len(TABLE) == 0

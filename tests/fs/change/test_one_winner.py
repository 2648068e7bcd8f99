"""One winner per expected hash: of the calls naming one file with the same
`expected_sha256`, exactly one changes it; every other is told
`file changed since it was read` and changes nothing.

Each round takes the file's sha256 as `stat_path` gives it, then releases several
writers at once (threads behind a barrier, or SDK sessions against a live server),
each with a different change. The file must then hold exactly the winner's change:
a loser told "edited" would be a lost update.
"""

from __future__ import annotations

import contextlib
import functools
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

import anyio
import pytest

from app.errors import LoomError
from app.fs.change import atomic, move, trash
from app.fs.change import edit as edit_mod
from app.fs.change import write as write_mod
from app.fs.change.edit import TextEdit
from app.fs.change.locks import TABLE
from app.fs.reading import listing
from tests.fs.conftest import call, populated_ws, race

ROUNDS = 40
WRITERS = 6
SESSIONS = 5
CHANGED = "file changed since it was read"
BASE = "".join(f"line {i}\n" for i in range(20))


def _edit_of(i: int) -> list[TextEdit]:
    return [TextEdit(old_text=f"line {i}\n", new_text=f"line {i} edited by {i}\n")]


def _edit(root, sha: str | None, i: int) -> object:
    return edit_mod.edit_file(root, "shared.txt", _edit_of(i), max_output_chars=4000,
                              expected_sha256=sha)


def _overwrite(root, sha: str | None, i: int) -> object:
    return write_mod.write_file(root, "dir/shared.txt", f"writer {i}\n", overwrite=True,
                                expected_sha256=sha)


def _nth(ops: Sequence[Callable[[], object]], i: int) -> object:
    return ops[i]()


def test_concurrent_edits_with_one_expected_hash_have_exactly_one_winner(tmp_path: Path):
    disk, root = populated_ws(tmp_path)
    target = disk.ws / "shared.txt"
    for rnd in range(ROUNDS):
        target.write_text(BASE)
        sha = listing.stat_path(root, "shared.txt").sha256
        won, refused = race(WRITERS, functools.partial(_edit, root, sha))
        assert len(won) == 1, f"round {rnd}: {len(won)} writers were told 'edited'"
        assert refused == [CHANGED] * (WRITERS - 1), refused
        w = won[0]
        assert target.read_text() == BASE.replace(f"line {w}\n", f"line {w} edited by {w}\n")
    assert len(TABLE) == 0  # no entry outlives its last holder


def test_concurrent_overwrites_with_one_expected_hash_have_exactly_one_winner(tmp_path: Path):
    disk, root = populated_ws(tmp_path)
    target = disk.ws / "dir" / "shared.txt"
    for rnd in range(ROUNDS):
        target.write_text(BASE)
        sha = listing.stat_path(root, "dir/shared.txt").sha256
        won, refused = race(WRITERS, functools.partial(_overwrite, root, sha))
        assert len(won) == 1, f"round {rnd}: {len(won)} writers were told 'written'"
        assert refused == [CHANGED] * (WRITERS - 1), refused
        assert target.read_text() == f"writer {won[0]}\n"
    assert len(TABLE) == 0


def test_edits_meeting_between_the_last_check_and_the_rename_still_have_one_winner(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """The window made wide: each writer waits after its final check until all writers have
    checked (or half a second has passed). Writers that are not serialised all pass their
    checks before any renames, and every one is told "edited"."""
    disk, root = populated_ws(tmp_path)
    (disk.ws / "shared.txt").write_text(BASE)
    sha = listing.stat_path(root, "shared.txt").sha256
    all_checked = threading.Barrier(WRITERS)
    real_guard = write_mod.unchanged_guard

    def slow_guard(parent, seen):
        guard = real_guard(parent, seen)

        def checked_then_wait() -> None:
            guard()
            # Broken after half a second: the others are waiting for this one (serialised).
            with contextlib.suppress(threading.BrokenBarrierError):
                all_checked.wait(timeout=0.5)

        return checked_then_wait

    monkeypatch.setattr(edit_mod, "unchanged_guard", slow_guard)
    won, refused = race(WRITERS, lambda i: edit_mod.edit_file(
        root, "shared.txt", _edit_of(i), max_output_chars=4000, expected_sha256=sha))
    assert len(won) == 1, won
    assert refused == [CHANGED] * (WRITERS - 1)


@pytest.mark.parametrize("attempt", range(3))
def test_concurrent_overwrites_of_a_new_name_all_succeed(tmp_path: Path, attempt: int):
    """overwrite=true on a name that does not exist yet: each writer creates or replaces the
    file, none is told to pass overwrite=true (which it did)."""
    disk, root = populated_ws(tmp_path)
    won, refused = race(8, lambda i: write_mod.write_file(
        root, "new/same.txt", f"writer {i}\n", overwrite=True))
    assert refused == [] and len(won) == 8
    assert (disk.ws / "new" / "same.txt").read_text() in {f"writer {i}\n" for i in range(8)}


@pytest.mark.parametrize("what", ["file", "directory"])
def test_a_name_created_by_another_program_before_the_rename(tmp_path, monkeypatch, what):
    """Another program creates the name between the write's look and its rename: with
    overwrite=true a file there is replaced, a directory is named for what it is; without
    it, the answer asks for overwrite=true. Nothing else is left behind."""
    disk, root = populated_ws(tmp_path)
    late = disk.ws / "dir" / "late.txt"
    real = atomic.rename_noreplace

    def appears_first(src_fd, src, dst_fd, dst):
        if not late.exists():
            late.mkdir() if what == "directory" else late.write_text("theirs\n")
        return real(src_fd, src, dst_fd, dst)

    monkeypatch.setattr(atomic, "rename_noreplace", appears_first)
    if what == "file":
        out = write_mod.write_file(root, "dir/late.txt", "ours\n", overwrite=True)
        assert (out.created, late.read_text()) == (False, "ours\n")
    else:
        with pytest.raises(LoomError) as exc:
            write_mod.write_file(root, "dir/late.txt", "ours\n", overwrite=True)
        assert exc.value.message == "not a regular file: 'dir/late.txt' is a directory"
    late.unlink() if late.is_file() else late.rmdir()
    with pytest.raises(LoomError) as plain:
        write_mod.write_file(root, "dir/late.txt", "ours\n")
    assert plain.value.message == "'dir/late.txt' already exists; pass overwrite=true to replace it"
    assert sorted(p.name for p in (disk.ws / "dir").iterdir()) == ["a.txt", "late.txt", "sub"]


def test_crossed_moves_and_deletes_never_deadlock(tmp_path: Path):
    """a -> b and b -> a (overwrite) at once take the same two keys; with deletes and edits
    of both names among them. Every thread ends, and the table is empty after."""
    disk, root = populated_ws(tmp_path)
    for rnd in range(ROUNDS // 2):
        (disk.ws / "a.txt").write_text("a\n")
        (disk.ws / "b.txt").write_text("b\n")
        ops = [
            lambda: move.move_file(root, "a.txt", "b.txt", overwrite=True),
            lambda: move.move_file(root, "b.txt", "a.txt", overwrite=True),
            lambda: trash.delete(root, "a.txt"),
            lambda: write_mod.write_file(root, "b.txt", "w\n", overwrite=True),
            lambda: edit_mod.edit_file(root, "a.txt", [TextEdit(old_text="a", new_text="A")],
                                       max_output_chars=2000),
        ]
        won, refused = race(len(ops), functools.partial(_nth, ops))
        assert len(won) + len(refused) == len(ops), f"round {rnd}: a thread never ended"
    assert len(TABLE) == 0


# -- over HTTP: several SDK sessions against the live server -------------------------


async def _one_round(sessions, tool, path, args_of) -> list[tuple[int, bool, object]]:
    first = sessions[0]
    is_error, st = await call(first, "stat_path", path=path)
    assert not is_error, st
    answers: list[tuple[int, bool, object]] = []

    async def one(i: int) -> None:
        is_err, res = await call(sessions[i], tool, **args_of(i, st["sha256"]))
        answers.append((i, is_err, res))

    async with anyio.create_task_group() as tg:
        for i in range(len(sessions)):
            tg.start_soon(one, i)
    return answers


@pytest.mark.parametrize("tool", ["edit_file", "write_file"])
def test_one_winner_per_hash_over_http(disk, server, tool):
    target = disk.ws / "shared.txt"

    def args_of(i: int, sha: str) -> dict:
        target_args = {"path": "shared.txt", "expected_sha256": sha}
        if tool == "edit_file":
            return {**target_args, "edits": [{"old_text": f"line {i}\n",
                                              "new_text": f"line {i} edited by {i}\n"}]}
        return {**target_args, "content": f"writer {i}\n", "overwrite": True}

    async def main() -> list:
        results = []
        async with contextlib.AsyncExitStack() as stack:
            sessions = [await stack.enter_async_context(server.session())
                        for _ in range(SESSIONS)]
            for _ in range(ROUNDS):
                target.write_text(BASE)
                answers = await _one_round(sessions, tool, "shared.txt", args_of)
                results.append((answers, target.read_text()))
        return results

    for rnd, (answers, content) in enumerate(anyio.run(main)):
        won = [i for i, is_err, _ in answers if not is_err]
        assert len(won) == 1, f"round {rnd}: sessions {won} were all told they changed the file"
        assert sorted(str(res) for _, is_err, res in answers if is_err) == [CHANGED] * (
            SESSIONS - 1)
        w = won[0]
        if tool == "edit_file":
            assert content == BASE.replace(f"line {w}\n", f"line {w} edited by {w}\n")
        else:
            assert content == f"writer {w}\n"

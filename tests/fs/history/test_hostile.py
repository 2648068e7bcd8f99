"""Hostile repositories get answers in the server's words, and every cursor ends.

Each shape of `tests/fs/history/hostile_cases.py` at a size safe to run in the test
process (the full sizes run in child processes with CPU and memory bounds in
`test_worst_cases_git.py`). A lying header is refused after one byte past its
claim; a delta chain through a huge base is refused before it is built; huge
messages are cut and the log's cursor moves; a wide tree is paged, page k
parsing no more than page 1; missing and corrupt objects are named; the
denied-content check finishes on a 20,000-level tree and refuses, with its
reason, a history past its limit.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from app.errors import BadArgument, DeniedName, LoomError, NotFound
from app.fs.control import NoControl
from app.fs.history import denied, listing, ops, treeobj
from app.fs.history.denied import HistoryCheckPending
from app.fs.history.errors import CorruptObject, ObjectTooLarge
from tests.fs.history import hostile_cases as hc
from tests.fs.history.conftest import fast_history, make_root
from tests.fs.history.hostile import MIB, Probe, sha_of

CAP = 65536
SHORT = re.compile(r"\b[0-9a-f]{12}\b")


def log(root, **kw: Any):
    args = dict(path="", commit="HEAD", offset=0, limit=20, cursor=None, cap=CAP,
                control=NoControl())
    return ops.git_log(root, **{**args, **kw})


def show(root, **kw: Any):
    args = dict(commit="HEAD", path=None, start_line=1, end_line=300, offset=0, cap=CAP,
                control=NoControl())
    return ops.git_show(root, **{**args, **kw})


def diff(root, **kw: Any):
    args = dict(base="HEAD~1", target="HEAD", path="", offset=0, cap=CAP, read_budget=1 << 26,
                control=NoControl())
    return ops.git_diff(root, **{**args, **kw})


def follow(call: Callable[..., Any], most: int = 500, **kw: Any) -> tuple[list[Any], int]:
    """Pages a client gets by following next_cursor (and "call again"); fails if it never ends."""
    pages: list[Any] = []
    for calls in range(1, most + 1):
        try:
            page = call(**kw)
        except HistoryCheckPending as exc:
            if "call again" in exc.message:
                continue
            raise
        pages.append(page)
        if not page.has_more:
            return pages, calls
        assert page.next_cursor and page.next_cursor != kw.get("cursor"), "the cursor did not move"
        kw["cursor"] = page.next_cursor
    raise AssertionError(f"still going after {most} calls")


def built(tmp_path: Path, shape: Callable[..., Probe], **kw: Any):
    probe = shape(tmp_path / "repo", **kw)
    return make_root(tmp_path / "repo"), probe


# -- lying headers: refused one byte past the claim ------------------------------------


@pytest.mark.parametrize("shape", [hc.loose_bomb, hc.pack_bomb])
def test_a_header_that_lies_about_its_size_is_refused_naming_the_object(
    tmp_path: Path, inflated: list[int], shape: Callable[..., Probe]
) -> None:
    root, _ = built(tmp_path, shape, bomb=64 * MIB)
    bomb = sha_of("blob", b"ten bytes\n")[:12]
    with pytest.raises(CorruptObject, match=f"object {bomb} is corrupt: its data is longer "
                                           "than the 10 bytes its header says"):
        show(root, path="f.txt")
    assert sum(inflated) < MIB
    got = diff(root)
    assert [(f.path, f.diff) for f in got.files] == [("f.txt", None)]
    assert bomb in (got.files[0].note or "")
    assert sum(inflated) < 2 * MIB


def test_an_abbreviated_id_is_resolved_without_inflating_it(tmp_path: Path,
                                                            inflated: list[int]) -> None:
    root, probe = built(tmp_path, hc.loose_bomb_by_prefix)
    with pytest.raises(BadArgument, match="names a blob, not a commit"):
        show(root, commit=probe.commit)
    assert sum(inflated) < 1024


# -- delta chains ------------------------------------------------------------------------


def test_a_chain_through_a_huge_middle_base_is_refused_before_it_is_built(
    tmp_path: Path, inflated: list[int]
) -> None:
    root, _ = built(tmp_path, hc.delta_huge_middle, middle=64 * MIB)
    with pytest.raises(ObjectTooLarge, match=r"blob [0-9a-f]{12} is stored as a change of "
                                             r"67108864 bytes, above 16777216"):
        show(root, path="f.txt")
    assert sum(inflated) < MIB
    note = diff(root).files[0].note or ""
    assert "67108864 bytes" in note and SHORT.search(note)


@pytest.mark.parametrize(("shape", "error"), [
    (hc.deep_delta_chain, "a chain of more than 4095 deltas"),
    (hc.delta_cycle, "its delta chain refers back to itself"),
])
def test_endless_chains_are_refused(tmp_path: Path, shape, error: str) -> None:
    root, _ = built(tmp_path, shape)
    with pytest.raises(LoomError, match=error):
        show(root, path="f.txt")


def test_a_delta_that_is_its_own_base_is_named_in_the_diff(tmp_path: Path) -> None:
    root, _ = built(tmp_path, hc.delta_to_itself)
    got = diff(root)
    notes = {f.path: f.note or "" for f in got.files}
    assert "refers back to itself" in notes["f.txt"]
    assert "not before it in the pack" in notes["g.txt"]


# -- huge messages ---------------------------------------------------------------------


@pytest.mark.parametrize("cap", [CAP, 1000])
def test_huge_messages_are_cut_and_the_log_cursor_moves(tmp_path: Path, cap: int) -> None:
    root, _ = built(tmp_path, hc.huge_messages, size=4 * MIB)
    got = show(root, cap=cap)
    assert got.message.endswith("[... message cut]") and "message was cut" in (got.note or "")
    assert len(got.model_dump_json()) <= cap
    pages, _ = follow(log, root=root, cap=cap, limit=20)
    commits = [c for p in pages for c in p.commits]
    assert len(commits) == 4 and [c.subject for c in commits][-1] == "first"
    assert all(c.subject.endswith("[... cut]") for c in commits[:3])
    assert all(len(p.model_dump_json()) <= cap for p in pages)


def test_a_client_following_offsets_ends_too(tmp_path: Path) -> None:
    """A page that only walked (the per-call budget) moves its cursor, not its offset:
    it gives no next_offset, so a client that follows offsets stops instead of asking the
    same page for ever."""
    repo = fast_history(tmp_path / "long", 120)
    root = make_root(repo.path)
    offset, calls = 0, 0
    while True:
        calls += 1
        page = log(root, path="docs/rare.md", offset=offset, budget=7)
        if page.next_offset is None:
            break
        assert page.next_offset > offset
        offset = page.next_offset
    assert calls < 50 and (not page.has_more or "cursor" in (page.note or ""))


# -- wide trees: pages, and page k costs what page 1 does ------------------------------


@pytest.fixture(scope="module")
def wide(tmp_path_factory: pytest.TempPathFactory):
    path = tmp_path_factory.mktemp("wide") / "repo"
    hc.wide_tree(path, n=6_000)
    return make_root(path)


def _parsed_per_call(monkeypatch) -> list[int]:
    counts = [0]
    real = treeobj.Tree.entries

    def counting(self, start: int = 0):
        for item in real(self, start):
            counts[-1] += 1
            yield item

    monkeypatch.setattr(treeobj.Tree, "entries", counting)
    return counts


@pytest.mark.parametrize("tool", ["show", "diff"])
def test_a_wide_tree_is_paged_and_page_k_does_not_walk_the_pages_before(
    wide, monkeypatch, tool: str
) -> None:
    monkeypatch.setattr(listing, "RENAME_SCAN", 50)  # so 6,000 changes stream
    counts = _parsed_per_call(monkeypatch)
    call = show if tool == "show" else diff
    seen: list[str] = []
    pages = 0
    kw: dict[str, Any] = {"root": wide, "cap": 4000}
    while True:
        counts.append(0)
        page = call(**kw)
        pages += 1
        seen += [f.path for f in page.files]
        if not page.has_more:
            break
        kw["cursor"] = page.next_cursor
    assert seen == ["f.txt"] + [f"f{i:06d}" for i in range(6_000)]
    assert pages > 40
    per_page = counts[2:-1]  # the first page starts the walk; the last may be short
    assert max(per_page) < 2 * min(per_page) + 100, per_page  # not growing with k


def test_a_cursor_not_signed_here_is_followed_by_its_path(wide, monkeypatch) -> None:
    """A cursor whose positions were changed (or that another process signed) is followed by
    the path it names, never by the positions; one that names no path is refused."""
    monkeypatch.setattr(listing, "RENAME_SCAN", 50)
    first = show(wide, cap=4000)
    assert first.next_cursor is not None
    mac, count, positions, path = first.next_cursor.split(":", 3)
    forged = ":".join((mac, count, "0,7", path))
    assert show(wide, cap=4000, cursor=forged).files == show(
        wide, cap=4000, cursor=first.next_cursor).files
    for bad in ("", "x", "1:2", f"{mac}:{count}:{positions}:../etc", f"{mac}:-1::f.txt"):
        with pytest.raises(BadArgument, match="invalid cursor"):
            show(wide, cap=4000, cursor=bad)


def test_offsets_still_page_a_wide_tree(wide) -> None:
    first = show(wide, cap=4000)
    second = show(wide, cap=4000, offset=first.next_offset)
    assert second.files[0].path > first.files[-1].path


def test_a_file_in_a_wide_tree_is_found(wide) -> None:
    got = show(wide, path="f005999")
    assert got.file is not None and got.file.content.startswith("1 | same")


# -- missing and corrupt objects: named, in every tool -----------------------------------


def test_a_missing_blob_is_named(tmp_path: Path) -> None:
    root, _ = built(tmp_path, hc.missing_blob)
    with pytest.raises(NotFound, match=r"object [0-9a-f]{12} is missing from the repository"):
        show(root, path="f.txt")
    assert "is missing" in (diff(root).files[0].note or "")
    assert [c.subject for c in log(root).commits] == ["second", "first"]


@pytest.mark.parametrize("shape", [hc.self_parent, hc.loose_under_wrong_name, hc.tag_to_itself,
                                   hc.missing_tree_and_parent, hc.unsorted_tree])
def test_crafted_and_missing_objects_are_named_by_every_tool(tmp_path: Path, shape) -> None:
    root, probe = built(tmp_path, shape)
    calls = [lambda: log(root, commit=probe.commit), lambda: show(root, commit=probe.commit),
             lambda: show(root, commit=probe.commit, path="f.txt"),
             lambda: diff(root, base=probe.commit, target=None)]
    for call in calls:
        try:
            got = call()
        except LoomError as exc:
            assert SHORT.search(exc.message) or "HEAD" in exc.message, exc.message
        else:
            assert got is not None


def test_corrupt_objects_refuse_contents_with_their_reason(tmp_path: Path) -> None:
    root, _ = built(tmp_path, hc.corrupt_objects)
    denied._cache.clear()
    with pytest.raises(HistoryCheckPending, match=r"not served: .*tree entry at byte 0"):
        diff(root)
    with pytest.raises(CorruptObject, match=r"object [0-9a-f]{12} is corrupt: a tree entry"):
        show(root)  # the file list names the tree it cannot read
    assert [c.subject for c in log(root).commits] == ["second", "first"]


# -- the denied-content check: progress on every call, then an answer ------------------


def test_the_denied_check_finishes_on_a_tree_20000_levels_deep(tmp_path: Path,
                                                               monkeypatch) -> None:
    root, _ = built(tmp_path, hc.deep_tree)
    denied._cache.clear()
    monkeypatch.setattr(denied, "TREE_BUDGET", 2000)
    progress: list[str] = []
    for _ in range(40):
        try:
            got = show(root, path="f.txt")
            break
        except HistoryCheckPending as exc:
            assert "call again" in exc.message
            progress.append(exc.message)
    else:
        raise AssertionError("the check never finished")
    assert got.file is not None and got.file.content == "1 | fine"
    checked = [int(re.search(r"(\d+) trees read", m).group(1)) for m in progress]  # type: ignore[union-attr]
    assert len(checked) >= 5 and checked == sorted(set(checked))  # it moved every call
    with pytest.raises(DeniedName):  # a copy of the .env 20,000 levels down is withheld
        show(root, path="copy.txt")
    denied._cache.clear()


def test_a_history_past_the_tree_limit_is_refused_with_its_reason(tmp_path: Path,
                                                                 monkeypatch) -> None:
    repo = fast_history(tmp_path / "long", 200)
    root = make_root(repo.path)
    denied._cache.clear()
    monkeypatch.setattr(denied, "MAX_TREES", 150)
    monkeypatch.setattr(denied, "TREE_BUDGET", 40)
    with pytest.raises(HistoryCheckPending, match=r"not served: it is too large \(more than "
                                                  r"150 trees\)"):
        follow(show, path="docs/rare.md", root=root, commit="HEAD", most=50)
    with pytest.raises(HistoryCheckPending, match="too large"):  # and it stays so, at once
        diff(root)
    assert log(root).returned == 20  # logs still work
    denied._cache.clear()

"""Bounds: a budget of commits per git_log call with a cursor, pages, the output
cap with visible cuts, large files, the bounded denied-content check; and
answers that do not change under parallel calls."""

from __future__ import annotations

import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from app.errors import DeniedName, TooLarge
from app.fs.control import NoControl
from app.fs.history import denied, ops, textdiff
from app.fs.history import diff as diff_mod
from app.fs.history.denied import HistoryCheckPending
from app.fs.history.ops import DIFF_CUT
from tests.fs.history.conftest import SECRET, Repo, build_history, fast_history, make_root


def log_all(root, path: str, limit: int, budget: int, cap: int = 65536):
    ids: list[str] = []
    pages = []
    cursor = None
    for _ in range(10_000):
        page = ops.git_log(root, path=path, commit="HEAD", offset=0, limit=limit, cursor=cursor,
                           cap=cap, control=NoControl(), budget=budget)
        pages.append(page)
        ids += [c.id for c in page.commits]
        if not page.has_more:
            return ids, pages
        cursor = page.next_cursor
    raise AssertionError("the cursor never ended")


@pytest.fixture(scope="module")
def long_repo(tmp_path_factory: pytest.TempPathFactory) -> Repo:
    return fast_history(tmp_path_factory.mktemp("long") / "repo", 600)


@pytest.mark.parametrize(("limit", "budget"), [(5, 40), (3, 7), (20, 5000), (1, 1)])
def test_a_path_limited_log_pages_through_the_budget_to_gits_answer(
    long_repo: Repo, limit: int, budget: int
) -> None:
    root = make_root(long_repo.path)
    ids, pages = log_all(root, "docs/rare.md", limit, budget)
    assert ids == long_repo.git("log", "--format=%H", "--", "docs/rare.md").split()
    for page in pages:
        assert page.walked <= budget
        if page.truncated:  # stopped by the budget: said so, with a way on
            assert page.has_more and page.next_cursor
            assert "per-call budget" in (page.note or "")
    if budget < 50:
        assert any(p.truncated and p.returned == 0 for p in pages)


def test_a_plain_log_pages_to_the_whole_history(long_repo: Repo) -> None:
    root = make_root(long_repo.path)
    ids, _ = log_all(root, "", 97, 5000)
    assert ids == long_repo.git("log", "--format=%H").split()


@pytest.mark.parametrize("cap", [1000, 2000])
def test_a_log_page_cut_by_the_output_cap_says_so_and_continues(long_repo: Repo, cap) -> None:
    root = make_root(long_repo.path)
    ids, pages = log_all(root, "", 100, 5000, cap=cap)
    assert ids == long_repo.git("log", "--format=%H").split()
    assert all(len(p.model_dump_json()) <= cap for p in pages)
    cut = [p for p in pages if p.note and "output limit" in p.note]
    assert cut and all(p.has_more and 0 < p.returned < 100 for p in cut)


def test_a_long_message_is_cut_visibly(tmp_path: Path) -> None:
    repo, _ = build_history(tmp_path)
    repo.commit("Subject\n\n" + "a long body line\n" * 3000, 1_800_000_000)
    got = ops.git_show(make_root(repo.path), commit="HEAD", path=None, start_line=1,
                       end_line=300, offset=0, cap=4000, control=NoControl())
    assert got.message.startswith("Subject") and got.message.endswith("[... message cut]")
    assert "message was cut" in (got.note or "")
    assert len(got.model_dump_json()) <= 4000


def test_one_path_limited_call_over_a_long_history_answers_within_seconds(long_repo) -> None:
    root = make_root(long_repo.path)
    t0 = time.perf_counter()
    page = ops.git_log(root, path="nowhere/at/all", commit="HEAD", offset=0, limit=20,
                       cursor=None, cap=65536, control=NoControl())
    assert time.perf_counter() - t0 < 10
    assert page.returned == 0 and not page.has_more and page.walked == 600


@pytest.mark.parametrize("cursor", ["x", "1:2", "0:0:" + "g" * 40, "0:0:" + "0" * 40])
def test_a_bad_cursor_is_a_clear_error(long_repo: Repo, cursor: str) -> None:
    from app.errors import LoomError

    with pytest.raises(LoomError, match="cursor"):
        ops.git_log(make_root(long_repo.path), path="", commit="HEAD", offset=0, limit=5,
                    cursor=cursor, cap=65536, control=NoControl())


# -- the output cap ------------------------------------------------------------------


@pytest.fixture(scope="module")
def hist(tmp_path_factory: pytest.TempPathFactory) -> tuple[Repo, dict[str, str]]:
    return build_history(tmp_path_factory.mktemp("b"))


def test_a_diff_longer_than_the_output_cap_is_cut_visibly(hist, monkeypatch) -> None:
    repo, ids = hist
    monkeypatch.setattr(textdiff, "MAX_DIFF_LINES", 100_000)
    root = make_root(repo.path, max_read=4 << 20)
    got = ops.git_diff(root, base=ids["key"], target=ids["delete_env"], path="big.txt",
                       offset=0, cap=3000, read_budget=1 << 26, control=NoControl())
    assert got.truncated
    f = got.files[0]
    assert f.diff is not None and f.diff.endswith(DIFF_CUT)
    assert len(got.model_dump_json()) <= 3000


@pytest.mark.parametrize("cap", [1200, 1500, 2500])
def test_diff_pages_add_up_to_every_file(hist, cap: int) -> None:
    repo, ids = hist
    root = make_root(repo.path)
    whole = ops.git_diff(root, base=ids["first"], target="HEAD", path="", offset=0, cap=65536,
                         read_budget=1 << 26, control=NoControl())
    seen: list[str] = []
    offset = 0
    while True:
        page = ops.git_diff(root, base=ids["first"], target="HEAD", path="", offset=offset,
                            cap=cap, read_budget=1 << 26, control=NoControl())
        assert len(page.model_dump_json()) <= cap
        assert page.returned >= 1
        seen += [f.path for f in page.files]
        if not page.has_more:
            break
        assert "offset=" in (page.note or "")
        assert page.next_offset is not None  # has_more
        offset = page.next_offset
    assert seen == [f.path for f in whole.files]


def test_show_pages_its_files_within_the_cap(long_repo: Repo) -> None:
    root = make_root(long_repo.path)
    first = long_repo.git("rev-list", "--max-parents=0", "HEAD").strip()
    whole = ops.git_show(root, commit=first, path=None, start_line=1, end_line=300, offset=0,
                         cap=65536, control=NoControl())
    assert whole.files
    page = ops.git_show(root, commit=first, path=None, start_line=1, end_line=300, offset=0,
                        cap=1000, control=NoControl())
    assert len(page.model_dump_json()) <= 1000 + 200
    assert page.has_more == (page.returned < len(whole.files))


def test_a_large_file_is_served_in_windows_and_not_diffed_whole(hist) -> None:
    repo, ids = hist
    root = make_root(repo.path, max_read=256 * 1024)
    # A window beyond the read budget is refused with the limit named, like read_text_file.
    with pytest.raises(TooLarge, match="max_read_bytes of root 'repo'"):
        ops.git_show(root, commit="HEAD", path="big.txt", start_line=39_000, end_line=39_010,
                     offset=0, cap=65536, control=NoControl())
    head = ops.git_show(root, commit="HEAD", path="big.txt", start_line=1, end_line=3,
                        offset=0, cap=65536, control=NoControl()).file
    assert head is not None and head.content.startswith("1 | line 0 of a large file")
    d = ops.git_diff(root, base=ids["delete_env"], target=ids["docs"], path="big.txt", offset=0,
                     cap=65536, read_budget=1 << 26, control=NoControl())
    assert d.files[0].diff is None and "too large to diff" in (d.files[0].note or "")


def test_a_binary_file_is_listed_without_a_diff(hist) -> None:
    repo, ids = hist
    d = ops.git_diff(make_root(repo.path), base=ids["delete_env"], target=ids["docs"],
                     path="logo.bin", offset=0, cap=65536, read_budget=1 << 26,
                     control=NoControl())
    assert [(f.path, f.change, f.diff, f.note) for f in d.files] == [
        ("logo.bin", "added", None, "binary files differ")
    ]
    assert repo.git("diff", "--numstat", ids["delete_env"], ids["docs"], "--", "logo.bin") \
        .startswith("-\t-\t")


# -- the denied-content check ----------------------------------------------------------


@pytest.mark.parametrize("budget", ["trees", "time"])
def test_the_denied_content_check_is_bounded_and_resumes(
    long_repo: Repo, monkeypatch, budget: str
) -> None:
    root = make_root(long_repo.path)
    denied._cache.clear()
    if budget == "trees":
        monkeypatch.setattr(denied, "TREE_BUDGET", 40)
    else:  # no time at all: each call gets its first 256 trees, then stops
        monkeypatch.setattr(denied, "TIME_BUDGET", 0.0)
    pending = 0
    for _ in range(1000):
        try:
            got = ops.git_diff(root, base="HEAD~300", target="HEAD", path="", offset=0,
                               cap=65536, read_budget=1 << 26, control=NoControl())
            break
        except HistoryCheckPending as exc:
            assert "call again" in exc.message
            pending += 1
    else:
        raise AssertionError("the check never finished")
    assert pending > 3
    assert "do-not-leak" not in got.model_dump_json()
    denied._cache.clear()
    monkeypatch.setattr(denied, "TREE_BUDGET", 10**9)
    monkeypatch.setattr(denied, "TIME_BUDGET", 1e9)
    monkeypatch.setattr(denied, "MAX_TREES", 30)
    with pytest.raises(HistoryCheckPending, match="too large"):
        ops.git_diff(root, base="HEAD~3", target="HEAD", path="", offset=0, cap=65536,
                     read_budget=1 << 26, control=NoControl())
    denied._cache.clear()


def test_a_dangling_commit_is_checked_too(tmp_path: Path) -> None:
    repo, _ = build_history(tmp_path)
    # A commit no ref reaches, whose tree holds a .env and a copy of it under another name.
    blob = repo.git("hash-object", "-w", "--stdin", stdin=b"DANGLING-do-not-leak\n").strip()
    tree = repo.git("mktree", stdin=f"100644 blob {blob}\t.env\n100644 blob {blob}\tnotes.txt\n"
                    .encode()).strip()
    commit = repo.git("commit-tree", tree, "-m", "dangling").strip()
    root = make_root(repo.path)
    with pytest.raises(DeniedName):
        ops.git_show(root, commit=commit[:10], path="notes.txt", start_line=1, end_line=300,
                     offset=0, cap=65536, control=NoControl())


def test_working_tree_content_equal_to_a_denied_file_is_withheld(tmp_path: Path) -> None:
    repo, _ = build_history(tmp_path)
    (repo.path / "README.md").write_text(SECRET + "\n")  # the .env of the first commit
    got = ops.git_diff(make_root(repo.path), base="HEAD", target=None, path="", offset=0,
                       cap=65536, read_budget=1 << 26, control=NoControl())
    readme = next(f for f in got.files if f.path == "README.md")
    assert readme.diff is None and "withheld" in (readme.note or "")
    assert "hunter2" not in got.model_dump_json()


def test_crafted_tree_names_are_skipped_not_served(tmp_path: Path) -> None:
    repo, _ = build_history(tmp_path)
    blob = repo.git("hash-object", "-w", "--stdin", stdin=b"x\n").strip()
    raw = b"".join(
        b"100644 " + name + b"\0" + bytes.fromhex(blob)
        for name in sorted([b"..", b"a\x01b", b"ok.txt", b"\xff\xfe"])
    )
    tree = repo.git("hash-object", "-w", "-t", "tree", "--literally", "--stdin", stdin=raw).strip()
    commit = repo.git("commit-tree", tree, "-m", "crafted").strip()
    got = ops.git_show(make_root(repo.path), commit=commit, path=None, start_line=1,
                       end_line=300, offset=0, cap=65536, control=NoControl())
    assert [f.path for f in got.files] == ["ok.txt"]
    assert "invalid names" in (got.note or "")


# -- concurrency ------------------------------------------------------------------------


def test_parallel_calls_get_what_serial_calls_get(hist) -> None:
    repo, ids = hist
    root = make_root(repo.path)
    denied._cache.clear()
    c = NoControl()
    calls = [
        lambda: ops.git_log(root, path="", commit="HEAD", offset=0, limit=50, cursor=None,
                            cap=65536, control=c),
        lambda: ops.git_log(root, path="src/main.py", commit="HEAD", offset=0, limit=50,
                            cursor=None, cap=65536, control=c),
        lambda: ops.git_show(root, commit=ids["rename"], path=None, start_line=1, end_line=300,
                             offset=0, cap=65536, control=c),
        lambda: ops.git_show(root, commit="v1", path="README.md", start_line=1, end_line=300,
                             offset=0, cap=65536, control=c),
        lambda: ops.git_diff(root, base=ids["first"], target="HEAD", path="", offset=0,
                             cap=65536, read_budget=1 << 26, control=c),
    ]
    serial = [f().model_dump_json() for f in calls]
    denied._cache.clear()
    with ThreadPoolExecutor(8) as pool:
        futures = [pool.submit(calls[i % len(calls)]) for i in range(40)]
        got = [f.result().model_dump_json() for f in futures]
    assert got == [serial[i % len(calls)] for i in range(40)]


def test_a_stretch_too_large_to_align_is_shown_whole_and_noted(tmp_path: Path) -> None:
    """600 x 600 changed lines pass the matcher's pair limit: the file's lines between its
    equal head and tail are shown whole (- then +), still a diff git would apply."""
    repo, _ = build_history(tmp_path)
    repo.write("wide.txt", "top\n" + "".join(f"old {i % 9}\n" for i in range(600)) + "end\n")
    repo.git("add", "wide.txt")
    repo.commit("wide", 1_700_000_000)
    repo.write("wide.txt", "top\n" + "".join(f"new {i % 9}\n" for i in range(600)) + "end\n")
    got = ops.git_diff(make_root(repo.path), base="HEAD", target=None, path="wide.txt",
                       offset=0, cap=1 << 20, read_budget=1 << 26, control=NoControl())
    [wide] = got.files
    assert wide.note == diff_mod.COARSE_NOTE
    assert (wide.added, wide.removed) == (600, 600)
    assert wide.diff is not None and wide.diff.split("\n")[:3] == ["@@ -1,602 +1,602 @@",
                                                                   " top", "-old 0"]
    check = subprocess.run(["git", "-C", str(repo.path), "apply", "--check", "-R", "-"],
                           input=f"--- a/wide.txt\n+++ b/wide.txt\n{wide.diff}\n".encode(),
                           capture_output=True, timeout=60)
    assert check.returncode == 0, check.stderr

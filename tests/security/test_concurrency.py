"""Concurrency never changes an answer: a differential test against serial runs.

Every read and search tool is called once, one at a time, to get the serial
answers; then the same calls run from many threads at once (the fs layer the
tools call) and from several HTTP sessions at once against a live server, and
each answer must equal its serial answer exactly. A walk that reads a shared
directory offset (a `dup` of the root handle) gives short or empty listings
here.
"""

from __future__ import annotations

import base64
import json
import os
import random
import shutil
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from app.corpus import deep_research
from app.fs.control import NoControl
from app.fs.history import ops as git_ops
from app.fs.reading import listing, media
from app.fs.reading import read as read_mod
from app.fs.search.files import search_files
from app.fs.search.options import FilesOptions, TextOptions
from app.fs.search.text import search_text
from app.registry import Registry
from tests.kit import dump, roots_toml
from tests.live import live_server

THREADS = 8
ROUNDS = 6
SESSIONS = 6
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)


def _tree(base: Path) -> Path:
    top = base / "root"
    top.mkdir()
    for i in range(201):
        (top / f"f{i:03}.txt").write_text(f"line one {i}\nneedle {i}\n")
    for d in range(5):
        sub = top / f"d{d}"
        sub.mkdir()
        for i in range(40):
            (sub / f"g{i:02}.py").write_text(f"# needle in d{d}/{i}\nx = {i}\n")
    # Dense with the needle in every case: the literal matchers list a window's matches
    # after a few calls on one text, and that listing is per call, never shared.
    (top / "dense.txt").write_text("".join(f"needle {i} NEEDLE Needle\n" for i in range(3000)))
    (top / "pic.png").write_bytes(PNG)
    (top / ".env").write_text("SECRET=1\n")
    _git_history(top, base / "home")
    return top


def _git_history(top: Path, home: Path) -> None:
    """Two commits and a change in the working tree, for the history tools."""
    if shutil.which("git") is None:
        return
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(HOME=str(home), GIT_CONFIG_NOSYSTEM="1", GIT_AUTHOR_NAME="A",
               GIT_AUTHOR_EMAIL="a@x.org", GIT_COMMITTER_NAME="A", GIT_COMMITTER_EMAIL="a@x.org",
               GIT_AUTHOR_DATE="@1700000000 +0000", GIT_COMMITTER_DATE="@1700000000 +0000")

    def git(*args: str) -> None:
        subprocess.run(["git", "-C", str(top), *args], env=env, check=True,
                       capture_output=True, timeout=60)

    git("init", "-q", "-b", "main")
    git("add", "d0", "d1", "f000.txt", "f001.txt")
    git("commit", "-q", "-m", "first")
    (top / "f001.txt").write_text("changed once\nneedle\n")
    git("add", "-A", "d2", "f001.txt", "f002.txt")
    git("commit", "-q", "-m", "second")
    (top / "f001.txt").write_text("changed twice\nneedle\n")


@pytest.fixture
def config(tmp_path: Path) -> Path:
    top = _tree(tmp_path)
    cfg = tmp_path / "cfg" / "loom.toml"
    cfg.parent.mkdir()
    cfg.write_text(roots_toml(
        ("r", top, "reference"), audit_log=tmp_path / "state" / "audit.log",
        extra="search_fetch_tools = true\nmax_search_results = 1000\nmax_output_chars = 1000000",
    ))
    return cfg


def _fs_calls(reg: Registry) -> dict[str, Callable[[], Any]]:
    """Every read and search tool's fs-layer call, by a label."""
    ctl = NoControl()

    def snap():
        return reg.current

    def root():
        return snap().root("r")

    return {
        "list_top": lambda: listing.list_directory(
            root(), "", recursive=False, max_depth=1, offset=0, limit=1000, cap=1 << 20,
            control=ctl,
        ),
        "list_recursive": lambda: listing.list_directory(
            root(), "", recursive=True, max_depth=3, offset=0, limit=1000, cap=1 << 20,
            control=ctl,
        ),
        "list_sub": lambda: listing.list_directory(
            root(), "d3", recursive=False, max_depth=1, offset=0, limit=1000, cap=1 << 20,
            control=ctl,
        ),
        "stat_root": lambda: listing.stat_path(root(), ""),
        "stat_file": lambda: listing.stat_path(root(), "d1/g07.py"),
        "read_text": lambda: read_mod.read_text_file(
            root(), "f100.txt", start=1, end=300, tail=None, cap=1 << 20
        ),
        "read_tail": lambda: read_mod.read_text_file(
            root(), "d2/g03.py", start=1, end=300, tail=1, cap=1 << 20
        ),
        "read_many": lambda: read_mod.read_multiple_files(
            root(), ["f000.txt", "d4/g39.py", "f200.txt"], cap=1 << 20, control=ctl
        ),
        "read_media": lambda: media.read_media(root(), "pic.png"),
        "search_files": lambda: search_files(
            root(), FilesOptions(pattern="*.py", offset=0, limit=1000, cap=1 << 20), ctl
        ),
        "search_files_top": lambda: search_files(
            root(), FilesOptions(pattern="f1*.txt", offset=0, limit=1000, cap=1 << 20), ctl
        ),
        "search_text": lambda: search_text(root(), TextOptions(
            query="needle", file_glob="*", case_sensitive=True, offset=0, limit=1000,
            cap=1 << 20, file_limit=1 << 20, budget=64 << 20,
        ), ctl),
        # The search options each have their own matcher state (a regex and its literal
        # prefilter, Hyperscan's scratch for a literal without case, listed windows).
        "search_regex_count": lambda: search_text(root(), TextOptions(
            query=r"(?i)\bneedle \d+", file_glob="*", case_sensitive=True, offset=0,
            limit=1000, cap=1 << 20, file_limit=1 << 20, budget=64 << 20,
            regex=True, output_mode="count",
        ), ctl),
        "search_caseless_context": lambda: search_text(root(), TextOptions(
            query="NEEDLE", file_glob="*", case_sensitive=False, offset=0, limit=1000,
            cap=1 << 20, file_limit=1 << 20, budget=64 << 20, context=1,
        ), ctl),
        "search_files_with_matches": lambda: search_text(root(), TextOptions(
            query="needle", file_glob="*.py", case_sensitive=True, offset=0, limit=1000,
            cap=1 << 20, file_limit=1 << 20, budget=64 << 20,
            output_mode="files_with_matches", exclude=["d3/**"],
        ), ctl),
        "search_dense_count": lambda: search_text(root(), TextOptions(
            query="Needle", file_glob="dense.txt", case_sensitive=False, offset=0,
            limit=1000, cap=1 << 20, file_limit=1 << 20, budget=64 << 20,
            output_mode="count",
        ), ctl),
        "research_search": lambda: deep_research.search(snap(), "needle", ctl),
        "research_fetch": lambda: deep_research.fetch(snap(), "r/f042.txt"),
        "git_log": lambda: git_ops.git_log(
            root(), path="", commit="HEAD", offset=0, limit=50, cursor=None, cap=1 << 20,
            control=ctl,
        ),
        "git_show": lambda: git_ops.git_show(
            root(), commit="HEAD~1", path="f001.txt", start_line=1, end_line=300, offset=0,
            cap=1 << 20, control=ctl,
        ),
        "git_diff": lambda: git_ops.git_diff(
            root(), base="HEAD~1", target=None, path="", offset=0, cap=1 << 20,
            read_budget=64 << 20, control=ctl,
        ),
    }


def _differences(calls: dict[str, Callable[[], Any]]) -> tuple[int, int, list[str]]:
    serial = {k: json.dumps(dump(fn()), sort_keys=True) for k, fn in calls.items()}
    assert all(serial.values())
    wrong: list[str] = []
    total = [0]
    barrier = threading.Barrier(THREADS)
    lock = threading.Lock()

    def worker(seed: int) -> None:
        order = [k for _ in range(ROUNDS) for k in calls]
        random.Random(seed).shuffle(order)
        barrier.wait()
        for k in order:
            try:
                got = json.dumps(dump(calls[k]()), sort_keys=True)
            except Exception as exc:  # an error where the serial call answered is wrong too
                got = f"error: {exc!r}"
            with lock:
                total[0] += 1
                if got != serial[k]:
                    wrong.append(k)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads)
    return len(wrong), total[0], sorted(set(wrong))


@pytest.mark.parametrize("engine", ["openat2", "walk"])
def test_parallel_fs_calls_get_the_serial_answers(
    config: Path, engine: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from app.security import openat2

    if engine == "openat2" and not openat2.available():
        pytest.skip("openat2 is not available on this kernel")
    if shutil.which("git") is None:
        pytest.skip("git is needed to build the history the history tools read")
    reg = Registry(str(config), audit=False)
    for r in reg.current.roots.values():
        r._use_openat2 = engine == "openat2"
    n_wrong, total, which = _differences(_fs_calls(reg))
    assert total == THREADS * ROUNDS * len(_fs_calls(reg))
    assert n_wrong == 0, f"{n_wrong} of {total} parallel answers differ from serial: {which}"


# -- the same over HTTP: several sessions against one live server --------------

HTTP_CALLS: list[tuple[str, dict[str, Any]]] = [
    ("list_directory", {"root": "r", "path": "", "limit": 1000}),
    ("list_directory", {"root": "r", "path": "", "recursive": True, "max_depth": 3, "limit": 1000}),
    ("list_directory", {"root": "r", "path": "d3", "limit": 1000}),
    ("stat_path", {"root": "r", "path": "d1/g07.py"}),
    ("stat_path", {"root": "r", "path": ""}),
    ("read_text_file", {"root": "r", "path": "f100.txt"}),
    ("read_multiple_files", {"root": "r", "paths": ["f000.txt", "d4/g39.py"]}),
    ("read_media_file", {"root": "r", "path": "pic.png"}),
    ("search_files", {"root": "r", "pattern": "*.py", "limit": 1000}),
    ("search_text", {"root": "r", "query": "needle", "limit": 1000}),
    ("search_text", {"root": "r", "query": r"needle \d+$", "regex": True, "context": 1,
                     "file_glob": "*.txt", "limit": 1000}),
    ("search_text", {"root": "r", "query": "NEEDLE", "case_sensitive": False,
                     "output_mode": "count", "limit": 1000}),
    ("search", {"query": "needle"}),
    ("fetch", {"id": "r/f042.txt"}),
    ("git_log", {"root": "r"}),
    ("git_show", {"root": "r", "commit": "HEAD"}),
    ("git_show", {"root": "r", "commit": "HEAD~1", "path": "f001.txt"}),
    ("git_diff", {"root": "r", "base": "HEAD~1"}),
]


WALKING = {"list_directory", "search_files", "search_text", "search"}


def _answer(result: Any) -> str:
    if result.is_error:
        return "error: " + " ".join(getattr(c, "text", "") for c in result.content)
    return json.dumps(result.structured_content, sort_keys=True)


def test_parallel_http_sessions_get_the_serial_answers(config: Path) -> None:
    if shutil.which("git") is None:
        pytest.skip("git is needed to build the history the history tools read")
    with live_server(config) as srv:

        async def main() -> tuple[list[str], list[str], int]:
            serial: list[str] = []
            async with srv.session() as s:
                for name, args in HTTP_CALLS:
                    serial.append(_answer(await s.call_tool(name, args)))
            wrong: list[str] = []
            count = [0]

            async def one(seed: int) -> None:
                # Every call twice, and the walking ones (where an offset is shared) more.
                walking = [i for i, (n, _) in enumerate(HTTP_CALLS) if n in WALKING]
                order = list(range(len(HTTP_CALLS))) * 2 + walking * 4
                random.Random(seed).shuffle(order)
                async with srv.session() as s:
                    for i in order:
                        name, args = HTTP_CALLS[i]
                        got = _answer(await s.call_tool(name, args))
                        count[0] += 1
                        if got != serial[i]:
                            wrong.append(f"{name} {args}")

            with anyio.fail_after(240):
                async with anyio.create_task_group() as tg:
                    for seed in range(SESSIONS):
                        tg.start_soon(one, seed)
            return serial, wrong, count[0]

        serial, wrong, count = anyio.run(main)
    assert not any(a.startswith("error") for a in serial), serial
    walking = sum(1 for n, _ in HTTP_CALLS if n in WALKING)
    assert count == SESSIONS * (2 * len(HTTP_CALLS) + 4 * walking)
    assert not wrong, f"{len(wrong)} of {count} answers differ from serial: {sorted(set(wrong))}"

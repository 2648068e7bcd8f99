"""Shared fixtures: real directories on disk, real configs, real roots."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.kit import config_file, roots_toml

# Tests whose assertions read the wall clock or count what a racing thread managed to do: they
# run alone, after the parallel part (`run_tests.sh`: `-m "not serial"` on two workers, then
# `-m serial`), because a second worker's CPU load is exactly what they must not measure.
SERIAL: dict[str, str] = {
    "tests/security/test_race.py": "an attacker thread's swaps are counted",
    "tests/fs/change/test_write_races.py": "an attacker thread's swaps are counted",
    "tests/service/test_healthz_under_worst_cases.py": "/healthz must answer within a second",
    "tests/service/test_cancel.py": "the work must stop within half a second of a cancel",
    "tests/service/test_http_limits.py": "slow clients are timed byte by byte",
    "tests/service/test_http_connection_floods.py": "300 connections held by a racing thread",
    "tests/security/test_attacks.py::test_opening_a_fifo_returns_at_once": "a 1.8 s watchdog",
    "tests/fs/index/test_open.py::test_a_file_mapped_before_the_watch_began_is_read_until_"
    "indexed_after_the_window": "the file must be indexed within 42 s of its change",
}


# A test that takes longer than this on its own is marked `slow` (docs/testing.md). Wall
# time on a shared machine is noise, so this is said at the end of a run, never failed on.
SLOW_SECONDS = float(os.environ.get("LOOMFS_SLOW_SECONDS", "30"))
_took: dict[str, float] = {}


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if "slow" not in report.keywords:
        _took[report.nodeid] = _took.get(report.nodeid, 0.0) + report.duration


def pytest_terminal_summary(terminalreporter: Any) -> None:
    over = sorted(((t, n) for n, t in _took.items() if t > SLOW_SECONDS), reverse=True)
    if over:
        terminalreporter.write_line(
            f"{len(over)} tests not marked slow took over {SLOW_SECONDS:.0f} s here "
            "(mark them if they do on a quiet machine):"
        )
        for took, name in over[:20]:
            terminalreporter.write_line(f"  {took:6.1f} s  {name}")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        module = item.nodeid.split("::", 1)[0]
        test = item.nodeid.split("[", 1)[0]
        if module in SERIAL or test in SERIAL:
            item.add_marker(pytest.mark.serial)


# The person's own state folder, as it was before any test ran: a test that writes there
# (a child started with an environment that drops XDG_STATE_HOME, as the SDK's stdio client
# does by default) fails the run, said at the end.
_REAL_STATE: dict[str, Any] = {}


def _listing(folder: str) -> list[str] | None:
    try:
        return sorted(os.listdir(folder))
    except FileNotFoundError:
        return None


def pytest_sessionstart(session: pytest.Session) -> None:
    if hasattr(session.config, "workerinput"):  # a worker: the controller checks for all
        return
    from app.security.statedir import state_dir

    folder = state_dir()
    _REAL_STATE.update(folder=folder, before=_listing(folder))


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    folder = _REAL_STATE.get("folder")
    if folder is None:
        return
    made = sorted(set(_listing(folder) or []) - set(_REAL_STATE["before"] or []))
    if made:
        print(f"\nA test wrote into the real state folder {folder}: {', '.join(made)} "
              "(start children with tests.live.env_without_loomfs(), which keeps "
              "XDG_STATE_HOME)")
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture(scope="session", autouse=True)
def _state_home_outside_the_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """No test writes the real home: every server started in this session (in process, or
    a child that inherits the environment, module-scoped ones included) keeps its state
    (made token, default audit log, index) under a temporary XDG_STATE_HOME."""
    state = tmp_path_factory.mktemp("xdg-state")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("XDG_STATE_HOME", str(state))
        yield state


@pytest.fixture
def private_state_home(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Path:
    """A state folder of this test's own (a first start that makes a token, for one)."""
    state = tmp_path_factory.mktemp("xdg-state")
    monkeypatch.setenv("XDG_STATE_HOME", str(state))
    return state


@pytest.fixture
def write_config(tmp_path: Path) -> Callable[..., Path]:
    """Write a TOML config into tmp_path/cfg and return its path."""

    def _write(body: str, name: str = "roots.toml") -> Path:
        return config_file(tmp_path, body, name)

    return _write


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A small root with a few files, a subfolder and some denied names."""
    root = tmp_path / "root"
    (root / "src" / "pkg").mkdir(parents=True)
    (root / "src" / "pkg" / "mod.py").write_text("def f():\n    return 1\n")
    (root / "src" / "main.py").write_text("print('hello')\n")
    (root / "README.md").write_text("# Title\nSome text\n")
    (root / ".env").write_text("SECRET=1\n")
    (root / ".git").mkdir()
    (root / ".git" / "config").write_text("[core]\n")
    (root / "node_modules" / "x").mkdir(parents=True)
    (root / "node_modules" / "x" / "index.js").write_text("module.exports = 1\n")
    return root


@pytest.fixture
def one_root_config(write_config: Callable[..., Path], tree: Path) -> Callable[..., Path]:
    """A config with one root at `tree`, of the role asked for."""

    def _make(role: str = "reference", extra: str = "") -> Path:
        return write_config(roots_toml(("main", tree, role), audit_log=None, extra=extra))

    return _make


@pytest.fixture
def live(one_root_config: Callable[..., Path]) -> Iterator[Any]:
    """The real app under uvicorn with one reference root."""
    from tests.live import live_server

    with live_server(one_root_config("reference")) as srv:
        yield srv

"""The root registry: one immutable snapshot, swapped whole or not at all."""

from __future__ import annotations

import gc
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from app.config import MAX_CONFIG_BYTES
from app.errors import ConfigError, LoomError, RootGone, UnknownRoot
from app.registry import Registry, Snapshot
from tests.kit import roots_toml


@pytest.fixture
def place(tmp_path: Path) -> Path:
    for d in ("docs", "proj", "other"):
        (tmp_path / d).mkdir()
        (tmp_path / d / "a.txt").write_text(d.upper())
    (tmp_path / "docs" / "b.tmp").write_text("TMP")
    (tmp_path / "cfg").mkdir()
    return tmp_path


def config(place: Path, *roots: tuple[str, str, str], extra: str = "") -> str:
    return roots_toml(*roots, audit_log=place / "state" / "audit.log", extra=extra)


def write(place: Path, text: str) -> str:
    """Replace the config atomically, as an editor that renames over it would."""
    cfg = place / "cfg" / "roots.toml"
    tmp = cfg.with_suffix(".new")
    tmp.write_text(text)
    os.replace(tmp, cfg)
    return str(cfg)


def read(snap: Snapshot, root: str | None, path: str) -> str:
    with snap.root(root).open_file(path, op="read_text_file") as f:
        return os.read(f.fd, 100).decode()


ONE = [("docs", "{p}/docs", "reference")]
TWO = [("docs", "{p}/docs", "reference"), ("proj", "{p}/proj", "sourcecode")]


def roots(place: Path, spec: list[tuple[str, str, str]]) -> list[tuple[str, str, str]]:
    return [(n, p.format(p=place), r) for n, p, r in spec]


def test_reload_swaps_in_a_new_snapshot(place: Path) -> None:
    reg = Registry(write(place, config(place, *roots(place, ONE))))
    old = reg.current
    assert list(old.roots) == ["docs"] and old.default_root == "docs"
    write(place, config(place, *roots(place, TWO)))
    new = reg.reload()
    assert reg.current is new and new is not old
    assert new.generation == old.generation + 1
    assert list(new.roots) == ["docs", "proj"] and new.default_root is None
    assert new.granted() == {"read", "write"}
    # The old snapshot is untouched: immutable, not updated in place.
    assert list(old.roots) == ["docs"] and old.granted() == {"read"}


@pytest.mark.parametrize(
    "broken",
    [
        "roots = [",  # not TOML
        "[[roots]]\nname = 'docs'\npath = 'nowhere'\nrole = 'reference'\n",  # missing path
        "[[roots]]\nname = 'docs'\npath = '.'\nrole = 'workspace'\n",  # holds its own config
        "colour = 1\n[[roots]]\nname = 'docs'\npath = '../docs'\nrole = 'reference'\n",
    ],
    ids=["syntax", "missing path", "config inside a write root", "unknown key"],
)
def test_an_invalid_reload_raises_and_changes_nothing(place: Path, broken: str) -> None:
    reg = Registry(write(place, config(place, *roots(place, TWO))))
    seen: list[object] = []
    reg.on_swap(lambda old, new: seen.append(new))
    old = reg.current
    write(place, broken)
    with pytest.raises(ConfigError):
        reg.reload()
    assert reg.current is old
    assert seen == []
    # ... and the old snapshot still serves.
    assert read(reg.current, "proj", "a.txt") == "PROJ"



def _endless(cfg: Path) -> None:
    os.symlink("/dev/zero", cfg.with_suffix(".new"))
    os.replace(cfg.with_suffix(".new"), cfg)


def _fifo(cfg: Path) -> None:
    os.mkfifo(cfg.with_suffix(".new"))
    os.replace(cfg.with_suffix(".new"), cfg)  # nobody ever opens its other end


def _folder(cfg: Path) -> None:
    cfg.unlink()
    cfg.mkdir()


def _huge(cfg: Path) -> None:
    write(cfg.parent.parent, "#" * (MAX_CONFIG_BYTES + 1))


@pytest.mark.parametrize("swap", [_endless, _fifo, _folder, _huge],
                         ids=["link to /dev/zero", "fifo", "folder", "one byte too large"])
def test_a_config_swapped_for_what_cannot_be_read_whole_is_refused_at_once(
    place: Path, swap: Callable[[Path], None],
) -> None:
    """A reload reads at most MAX_CONFIG_BYTES of a regular file, without waiting: once a
    FIFO held the reload (and its lock) for ever, and /dev/zero filled memory."""
    reg = Registry(write(place, config(place, *roots(place, TWO))))
    old = reg.current
    swap(place / "cfg" / "roots.toml")
    outcome: list[BaseException | None] = []

    def reload() -> None:
        try:
            reg.reload()
            outcome.append(None)
        except BaseException as exc:  # the test reads what it was
            outcome.append(exc)

    worker = threading.Thread(target=reload, daemon=True)
    worker.start()
    worker.join(10)
    assert not worker.is_alive(), "the reload is held by the file it reads"
    assert isinstance(outcome[0], ConfigError)
    assert "cannot be read" in outcome[0].message or "link" in outcome[0].message
    assert reg.current is old and read(reg.current, "proj", "a.txt") == "PROJ"
    cfg = place / "cfg" / "roots.toml"
    if cfg.is_dir() and not cfg.is_symlink():
        cfg.rmdir()
    else:
        cfg.unlink()
    write(place, config(place, *roots(place, ONE)))  # the next good config loads
    assert list(reg.reload().roots) == ["docs"]


def test_a_config_of_exactly_the_bound_is_read() -> None:
    """The bound refuses past MAX_CONFIG_BYTES, not at it (read_small's own edge)."""
    import tempfile

    from app import hostfiles

    with tempfile.NamedTemporaryFile() as f:
        f.write(b"x" * MAX_CONFIG_BYTES)
        f.flush()
        assert len(hostfiles.read_small(f.name, MAX_CONFIG_BYTES)) == MAX_CONFIG_BYTES
        f.write(b"x")
        f.flush()
        with pytest.raises(hostfiles.TooLarge):
            hostfiles.read_small(f.name, MAX_CONFIG_BYTES)

def test_listeners_hear_each_successful_swap(place: Path) -> None:
    reg = Registry(write(place, config(place, *roots(place, ONE))))
    seen: list[tuple[int, int]] = []
    reg.on_swap(lambda old, new: seen.append((old.generation, new.generation)))
    reg.reload()
    reg.reload()
    assert seen == [(1, 2), (2, 3)]


def test_a_call_in_flight_finishes_on_the_snapshot_it_started_with(place: Path) -> None:
    cfg = write(place, config(place, *roots(place, ONE), extra='deny = ["*.tmp"]'))
    reg = Registry(cfg)
    held = reg.current  # what a call in flight took at its start
    docs = held.root("docs")
    # The new config points `docs` elsewhere and lifts the deny rule.
    write(place, config(place, ("docs", str(place / "other"), "reference")))
    reg.reload()
    assert read(reg.current, "docs", "a.txt") == "OTHER"
    assert read(held, "docs", "a.txt") == "DOCS"
    with pytest.raises(LoomError, match=r"^matches deny pattern '\*\.tmp'$"):
        docs.open_file("b.tmp", op="read")
    with reg.current.root("docs").open_dir("", op="list") as d:
        assert sorted(os.listdir(d.fd)) == ["a.txt"]


def test_a_root_whose_folder_moved_away_says_so_until_a_reload_fixes_it(place: Path) -> None:
    reg = Registry(write(place, config(place, *roots(place, ONE))))
    held = reg.current
    os.rename(place / "docs", place / "docs-moved")  # now the config names a missing path
    with pytest.raises(ConfigError):
        reg.reload()
    assert reg.current is held
    # The handle still reaches the moved folder, but that is not the root the config
    # names: the answer is an error naming the root, never the moved tree's content.
    with pytest.raises(RootGone, match="root 'docs' is gone"):
        read(held, "docs", "a.txt")
    os.rename(place / "docs-moved", place / "docs")
    assert read(held, "docs", "a.txt") == "DOCS"  # the same folder is back: it serves again


def test_root_handles_close_with_the_last_snapshot_that_holds_them(place: Path) -> None:
    reg = Registry(write(place, config(place, *roots(place, ONE))))
    fd = reg.current.root("docs").handle.fd
    assert os.readlink(f"/proc/self/fd/{fd}") == os.path.realpath(place / "docs")
    reg.reload()
    gc.collect()
    # The first snapshot is gone: its handle is closed (or the number reused for another file).
    try:
        where = os.readlink(f"/proc/self/fd/{fd}")
    except FileNotFoundError:
        where = None
    new_fd = reg.current.root("docs").handle.fd
    assert where is None or fd == new_fd or where != os.path.realpath(place / "docs")


def test_readers_never_see_a_half_built_snapshot(place: Path) -> None:
    """Reloads between two configs while readers check each snapshot is whole."""
    one, two = config(place, *roots(place, ONE)), config(place, *roots(place, TWO))
    reg = Registry(write(place, one))
    stop = threading.Event()
    problems: list[str] = []
    reads = 0

    def reader() -> None:
        nonlocal reads
        while not stop.is_set():
            snap = reg.current
            names = list(snap.roots)
            if names not in (["docs"], ["docs", "proj"]):
                problems.append(f"roots {names}")
            if [r.name for r in snap.config.roots] != names:
                problems.append("config and roots disagree")
            for name in names:
                try:
                    read(snap, name, "a.txt")
                except LoomError as exc:
                    problems.append(str(exc))
            reads += 1

    threads = [threading.Thread(target=reader) for _ in range(3)]
    for t in threads:
        t.start()
    try:
        deadline = time.monotonic() + 1.0
        i = 0
        while time.monotonic() < deadline:
            i += 1
            write(place, two if i % 2 else one)
            reg.reload()
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=5)
    assert problems == []
    assert i > 5 and reads > 5


def test_unknown_root_lists_the_known_names(place: Path) -> None:
    snap = Registry(write(place, config(place, *roots(place, TWO)))).current
    with pytest.raises(UnknownRoot) as err:
        snap.root("nope")
    assert err.value.message == "unknown root 'nope'; known roots: docs, proj"
    with pytest.raises(UnknownRoot) as err:
        snap.root(None)
    assert "no default_root" in err.value.message and "docs, proj" in err.value.message


def test_the_config_file_inside_a_read_only_root_is_denied(place: Path) -> None:
    cfg = write(place, config(place, ("cfg", str(place / "cfg"), "reference")))
    snap = Registry(cfg).current
    with pytest.raises(LoomError) as err:
        snap.root("cfg").open_file("roots.toml", op="read")
    assert err.value.message == "matches deny pattern 'roots.toml'"
    with snap.root("cfg").open_dir("", op="list") as d:
        assert "roots.toml" in os.listdir(d.fd)  # there, but never served


def test_the_audit_log_inside_a_read_only_root_is_denied_with_its_backups(place: Path) -> None:
    text = config(place, ("docs", str(place / "docs"), "reference"))
    text = text.replace(str(place / "state" / "audit.log"), str(place / "docs" / "audit.log"))
    snap = Registry(write(place, text)).current
    (place / "docs" / "audit.log.1").write_text("old")
    for name in ("audit.log", "AUDIT.LOG", "audit.log.1"):
        with pytest.raises(LoomError, match=r"^matches deny pattern"):
            snap.root("docs").open_file(name, op="read")


def test_calls_through_a_snapshot_are_audited(place: Path) -> None:
    reg = Registry(write(place, config(place, *roots(place, ONE))))
    read(reg.current, None, "a.txt")
    log = (place / "state" / "audit.log").read_text()
    assert "ALLOW root=docs path=a.txt op=read_text_file client=stdio" in log


def test_a_call_in_flight_is_audited_after_the_audit_settings_change(place: Path) -> None:
    reg = Registry(write(place, config(place, *roots(place, ONE))))
    held = reg.current
    moved = place / "state2" / "audit.log"
    text = config(place, *roots(place, ONE)).replace(str(place / "state" / "audit.log"), str(moved))
    write(place, text)
    reg.reload()
    read(held, "docs", "a.txt")  # the call that started before the reload ends now
    read(reg.current, "docs", "a.txt")
    lines = moved.read_text().splitlines()
    assert len(lines) == 2, lines
    assert all("ALLOW root=docs path=a.txt" in line for line in lines)


def test_an_audit_log_that_cannot_be_opened_fails_the_reload(place: Path) -> None:
    reg = Registry(write(place, config(place, *roots(place, ONE))))
    old = reg.current
    (place / "file").write_text("x")
    text = config(place, *roots(place, ONE))
    write(place, text.replace(str(place / "state" / "audit.log"), str(place / "file" / "a.log")))
    with pytest.raises(ConfigError) as err:
        reg.reload()
    assert err.value.message.startswith("invalid config: audit_log: cannot be opened")
    assert str(place) not in err.value.message
    assert reg.current is old
    read(old, "docs", "a.txt")
    assert "path=a.txt" in (place / "state" / "audit.log").read_text()


def test_reload_keeps_the_audit_log_open_across_swaps(place: Path) -> None:
    reg = Registry(write(place, config(place, *roots(place, ONE))))
    first = reg.current.audit
    assert first is not None
    assert reg.reload().audit is first
    write(place, config(place, *roots(place, ONE), extra="audit_log_backups = 5"))
    assert reg.reload().audit is first
    assert first.key[2] == 5

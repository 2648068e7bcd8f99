"""The server's own files are protected by identity for as long as they exist, and no longer.

Two ways that promise broke (docs/security.md, "The server's own files"):
- protection lost on rotation: the identity was re-taken from the path at each load, so
  after a token file or config was replaced the way editors save (a new file renamed over
  the old), a hard link to the old one inside a root became readable: the live token, or
  a config with host paths;
- protection that outlived the file: identities of files that were gone (a deleted audit
  backup, a config replaced while its reload was refused) were kept, and the file system
  handed the freed inode number to the next file made, so ordinary new files were refused
  as "one of the server's own files" and left out of listings.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from app.errors import ConfigError, DeniedName, LoomError, ServerFile
from app.fs.change import write
from app.fs.control import NoControl
from app.fs.reading import listing
from app.fs.reading import read as read_mod
from app.fs.search.options import TextOptions
from app.fs.search.text import search_text
from app.registry import Registry, Snapshot
from app.security.protected import Identity
from tests.kit import roots_toml

CTL = NoControl()


@pytest.fixture
def place(tmp_path: Path) -> Path:
    for d in ("ws", "etc", "state"):
        (tmp_path / d).mkdir()
    return tmp_path


def save_atomically(path: Path, text: str, how: str) -> None:
    """Replace `path` the way editors and rotation scripts do: the old inode goes on
    living only through the links it has elsewhere."""
    if how == "rename-over":  # write path.new, rename it over path
        tmp = path.with_name(path.name + ".new")
        tmp.write_text(text)
        os.replace(tmp, path)
    elif how == "move-aside":  # vim's backup: the old file becomes path~, a new one is made
        os.replace(path, path.with_name(path.name + "~"))
        path.write_text(text)
    else:
        raise AssertionError(how)


def names_listed(snap: Snapshot, root: str, folder: str = "") -> list[str]:
    got = listing.list_directory(
        snap.root(root), folder, recursive=False, max_depth=1, offset=0, limit=100000,
        cap=1 << 24, control=CTL,
    )
    return [e["name"] for e in got.model_dump()["entries"]]


def refused(fn: Callable[[], Any]) -> LoomError:
    with pytest.raises(LoomError) as info:
        fn()
    return info.value


# -- protection kept through a rotation ------------------------------------------

ROTATIONS = ["rename-over", "move-aside"]


@pytest.mark.parametrize("how", ROTATIONS)
@pytest.mark.parametrize("which", ["token", "config"])
def test_a_link_to_the_old_file_stays_refused_after_a_rotation_and_reload(
    place: Path, which: str, how: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A hard link inside a root to the token file (or the config), then the file is
    rotated and the config reloaded: the link still reaches the old file, which holds
    the token that was live (or the old config, host paths included)."""
    token = place / "etc" / "token"
    token.write_text("OLD-TOKEN-VALUE\n")
    monkeypatch.setenv("LOOMFS_TOKEN_FILE", str(token))
    cfg = place / "etc" / "loom.toml"
    body = roots_toml(("ws", place / "ws", "workspace"), audit_log=place / "state" / "a.log")
    cfg.write_text(body)
    os.link(token if which == "token" else cfg, place / "ws" / "innocent.txt")
    reg = Registry(str(cfg))
    r = reg.current.root("ws")
    assert isinstance(refused(lambda: listing.stat_path(r, "innocent.txt")), ServerFile)
    if which == "token":
        save_atomically(token, "NEW-TOKEN-VALUE\n", how)
    else:
        save_atomically(cfg, body + "# saved again\n", how)
    reg.reload()
    snap = reg.current
    r = snap.root("ws")
    for fn in (
        lambda: listing.stat_path(r, "innocent.txt"),
        lambda: read_mod.read_text_file(r, "innocent.txt", start=1, end=5, tail=None, cap=1000),
        lambda: write.write_file(r, "innocent.txt", "x", overwrite=True),
    ):
        assert isinstance(refused(fn), DeniedName)
    assert "innocent.txt" not in names_listed(snap, "ws")
    opts = TextOptions(
        query="TOKEN-VALUE|roots", file_glob="*", case_sensitive=False, offset=0, limit=100,
        cap=1 << 20, file_limit=1 << 20, budget=1 << 26, regex=True,
    )
    found = search_text(r, opts, CTL).model_dump_json()
    assert "innocent" not in found
    # The file now at the path is the server's too, by path and by identity.
    os.link(token if which == "token" else cfg, place / "ws" / "current.txt")
    assert isinstance(refused(lambda: listing.stat_path(r, "current.txt")), ServerFile)


def test_the_old_file_is_let_go_once_its_last_link_is_gone(place: Path) -> None:
    """After the link is removed the old inode is free: a file made later that gets its
    number is an ordinary file."""
    cfg = place / "etc" / "loom.toml"
    body = roots_toml(("ws", place / "ws", "workspace"), audit_log=place / "state" / "a.log")
    cfg.write_text(body)
    os.link(cfg, place / "ws" / "old.toml")
    reg = Registry(str(cfg), token_file=None)
    old = os.stat(cfg)
    save_atomically(cfg, body + "# v2\n", "rename-over")
    reg.reload()
    assert (old.st_dev, old.st_ino) in reg.protected.ids
    (place / "ws" / "old.toml").unlink()
    reg.reload()
    assert (old.st_dev, old.st_ino) not in reg.protected.ids


# -- no protection beyond the file's life -----------------------------------------


def _config(place: Path, valid: bool) -> str:
    text = roots_toml(
        ("ws", place / "ws", "workspace"), audit_log=place / "state" / "audit.log",
        extra="audit_log_max_bytes = 300\naudit_log_backups = 1",
    )
    return text if valid else text + "unknown_key = 1\n"


def _server_files(place: Path, cfg: Path) -> set[tuple[int, int]]:
    """The identities the server's files have right now."""
    files = [cfg, *(place / "state").iterdir()]
    return {(st.st_dev, st.st_ino) for st in (os.stat(f) for f in files if f.is_file())}


def _churn(place: Path, steps: int) -> Iterator[tuple[Registry, str, set[Identity]]]:
    """The server's set changing while ordinary files come and go: each step saves the
    config (in turn valid and invalid, a reload each time), writes a new file in the root
    (its audit lines rotate the log, which deletes its oldest backup) and yields the
    registry, the new file's name and the identities the server's files have had before
    the step's file was made and no longer have. The file is removed after the step."""
    cfg = place / "etc" / "loom.toml"
    cfg.write_text(_config(place, True))
    reg = Registry(str(cfg), token_file=None)
    once: set[Identity] = set()
    for i in range(steps):
        save_atomically(cfg, _config(place, i % 2 == 1), "rename-over")
        try:
            reg.reload()
        except ConfigError:
            assert i % 2 == 0
        once |= _server_files(place, cfg)
        name = f"new-{i}.txt"
        write.write_file(reg.current.root("ws"), name, f"file {i}\n")  # audit lines: rotations
        yield reg, name, once - _server_files(place, cfg)
        (place / "ws" / name).unlink()


def test_no_identity_is_kept_once_its_file_is_gone(place: Path) -> None:
    """On any file system: after each save, reload and rotation, no identity of a server's
    file that is gone is still protected (else the number, once the file system hands it
    out again, refuses an ordinary file)."""
    for reg, _name, gone in _churn(place, 40):
        assert not reg.protected.ids & gone


def _reuses_numbers(place: Path) -> bool:
    """Whether a number freed in the server's folder goes to the next file made in the
    root: ext4 hands it out at once when both folders share a block group; tmpfs and btrfs
    count up and never do."""
    for i in range(20):
        probe = place / "state" / f"probe-{i}"
        probe.touch()
        ino = probe.stat().st_ino
        probe.unlink()
        made = place / "ws" / f"probe-{i}"
        made.touch()
        again = made.stat().st_ino == ino
        made.unlink()
        if again:
            return True
    return False


@pytest.fixture
def reusing_place(tmp_path: Path) -> Iterator[Path]:
    """A `place` on a file system that reuses inode numbers: under the test's folder, else
    in the checkout's git-ignored `.scratch/` (a /tmp on tmpfs never reuses them); a few
    tries each, as ext4 may put a new folder in another block group."""
    for base in (tmp_path, Path(__file__).resolve().parents[1] / ".scratch"):
        for _ in range(3):
            try:
                base.mkdir(exist_ok=True)
                work = Path(tempfile.mkdtemp(dir=base))
            except OSError:
                break
            for d in ("ws", "etc", "state"):
                (work / d).mkdir()
            if _reuses_numbers(work):
                yield work
                shutil.rmtree(work)
                return
            shutil.rmtree(work)
    pytest.skip("no file system here hands a freed inode number out again: the hazard cannot "
                "arise (test_no_identity_is_kept_once_its_file_is_gone checks the mechanism)")


def test_no_new_file_is_refused_while_the_servers_files_come_and_go(
    reusing_place: Path,
) -> None:
    """Delete and recreate files until inode numbers repeat, while the server's set changes:
    no ordinary file is ever refused, and every one is listed."""
    reused = 0
    for reg, name, gone in _churn(reusing_place, 300):
        ino = os.stat(reusing_place / "ws" / name).st_ino
        reused += ino in {i for _, i in gone}
        snap = reg.current
        r = snap.root("ws")
        listing.stat_path(r, name)  # never "one of the server's own files"
        read_mod.read_text_file(r, name, start=1, end=2, tail=None, cap=1000)
        assert name in names_listed(snap, "ws"), name
        if reused >= 10:
            break
    # What makes the test worth having: new files did get numbers the server's files had.
    assert reused >= 10, f"inode numbers came back only {reused} times"


def test_a_reload_past_the_cap_on_held_files_is_refused_and_changes_nothing(
    place: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Old configs that keep a link elsewhere stay held (each is a descriptor): past the
    cap a reload is refused, saying why, rather than dropping one or running out."""
    import app.registry

    monkeypatch.setattr(app.registry, "MAX_HELD", 3)
    # A state folder of its own: the count holds only this test's files, whatever token or
    # owner secret another test left in the default one.
    monkeypatch.setenv("XDG_STATE_HOME", str(place / "xdg"))
    cfg = place / "etc" / "loom.toml"
    body = roots_toml(("ws", place / "ws", "workspace"), audit_log=place / "state" / "a.log")
    cfg.write_text(body)
    reg = Registry(str(cfg), token_file=None)  # the config and the audit log: 2 held
    for i in range(5):
        os.link(cfg, place / "etc" / f"kept-{i}.toml")  # a backup keeps each old version
        save_atomically(cfg, body + f"# v{i}\n", "rename-over")
        try:
            reg.reload()
        except ConfigError as exc:
            assert "already holds 4 of its own old files" in exc.message
            assert reg.current.generation == i + 1  # the last good snapshot
            break
    else:
        raise AssertionError("never refused")

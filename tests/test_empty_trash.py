"""`loom-fs-mcp --empty-trash ROOT --older-than DAYS`: the person's way to empty a trash.

Run as the console script, as a person would; no tool can reach the trash.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

EXE = str(Path(sys.executable).parent / "loom-fs-mcp")


def run(cfg: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([EXE, "--config", str(cfg), *args], capture_output=True, text=True,
                          timeout=30, check=False)


def _trash(tree: Path, outside: Path) -> Path:
    trash = tree / ".mcp-trash"
    for stamp in ("20200101T000000Z", "20200101T000000Z-1", "20991231T235959Z"):
        (trash / stamp / "src").mkdir(parents=True)
        (trash / stamp / "src" / "old.py").write_text("x" * 10)
    (trash / "20200101T000000Z" / "link_out").symlink_to(outside)  # never followed
    (trash / "notes-by-hand").mkdir()  # not a stamp: left alone
    return trash


def test_old_deletes_are_removed_new_ones_kept(one_root_config, tree, tmp_path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("keep")
    trash = _trash(tree, outside)
    cfg = one_root_config("workspace")
    dry = run(cfg, "--empty-trash", "main", "--older-than", "30", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "would remove 2 item(s) (deletes and versions), 20 bytes; kept 1 newer" in dry.stdout
    assert (trash / "20200101T000000Z").exists()
    done = run(cfg, "--empty-trash", "main", "--older-than", "30")
    assert done.returncode == 0, done.stderr
    assert "removed .mcp-trash/20200101T000000Z\n" in done.stdout
    assert sorted(os.listdir(trash)) == ["20991231T235959Z", "generation", "notes-by-hand"]
    assert (trash / "generation").read_text() == "1\n"  # bumped: a server's account re-lists
    assert (outside / "keep.txt").read_text() == "keep"  # the link was removed as a link


def test_bad_requests_are_refused_and_change_nothing(one_root_config, tree) -> None:
    cfg = one_root_config("workspace")
    (tree / ".mcp-trash" / "20200101T000000Z").mkdir(parents=True)
    unknown = run(cfg, "--empty-trash", "nope", "--older-than", "1")
    assert unknown.returncode == 2 and "unknown root 'nope'; known: main" in unknown.stderr
    no_age = run(cfg, "--empty-trash", "main")
    assert no_age.returncode == 2 and "--older-than DAYS" in no_age.stderr
    assert (tree / ".mcp-trash" / "20200101T000000Z").exists()


def test_a_root_without_trash_is_nothing_to_do(one_root_config) -> None:
    r = run(one_root_config("workspace"), "--empty-trash", "main", "--older-than", "0")
    assert r.returncode == 0 and "has no trash" in r.stdout


def test_a_trash_that_is_a_link_is_refused(one_root_config, tree, tmp_path) -> None:
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "20200101T000000Z").mkdir(parents=True)
    (tree / ".mcp-trash").symlink_to(elsewhere)
    r = run(one_root_config("workspace"), "--empty-trash", "main", "--older-than", "0")
    assert r.returncode == 1 and "cannot be emptied" in r.stderr
    assert (elsewhere / "20200101T000000Z").exists()


def test_a_tree_of_any_depth_is_emptied(one_root_config, tree) -> None:
    """A folder deeper than Python's recursion limit (1,200 levels, made outside the server,
    which makes paths at most MAX_DEPTH deep) with a file at the bottom is deleted: its
    stamp is measured and emptied like any other, with no recursion and one folder open
    at a time (a recursive walk ends in RecursionError, and would hold a
    descriptor per level)."""
    from app.fs.change import trash
    from app.registry import Registry

    cfg = one_root_config("workspace")
    root = Registry(str(cfg), audit=False).current.root("main")
    deep = "/".join(["d"] * 1200)
    try:
        subprocess.run(["mkdir", "-p", deep], cwd=tree, check=True, timeout=60)
        tree.joinpath(*deep.split("/"), "bottom.txt").write_text("x" * 7)
        (tree / "src" / "link_out").symlink_to("/")  # a link beside it, removed as a link
        trash.delete(root, "d")
        trash.delete(root, "src")
        dry = run(cfg, "--empty-trash", "main", "--older-than", "0", "--dry-run")
        assert dry.returncode == 0, dry.stderr
        assert "would remove 2 item(s) (deletes and versions), 44 bytes; kept 0 newer" in dry.stdout
        done = run(cfg, "--empty-trash", "main", "--older-than", "0")
        assert done.returncode == 0, done.stderr[-2000:]
        assert "removed 2 item(s) (deletes and versions), 44 bytes" in done.stdout
        # kept: not stamps (generation: the server's, then bumped by the emptying)
        assert sorted(os.listdir(tree / ".mcp-trash")) == [".gitignore", "generation"]
    finally:  # pytest's own clean-up (shutil.rmtree) recurses: too deep for it
        subprocess.run(["rm", "-rf", str(tree)], check=True, timeout=60)

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from app.cli import main
from app.corpus import trigram as corpus_trigram
from app.fs.index.trigrams import shards, trigram, trigram_build
from app.fs.index.trigrams.trigram_build import Build
from app.fs.index.trigrams.trigram_text import FileText
from app.registry import Registry
from tests.kit import roots_toml


def test_check_prints_roots_table_and_exits_zero(tmp_path: Path, write_config, capsys) -> None:
    (tmp_path / "docs").mkdir()
    cfg = write_config(roots_toml(("docs", tmp_path / "docs", "reference"), audit_log=None))
    assert main(["--check", "--config", str(cfg)]) == 0
    out, err = capsys.readouterr()
    assert "docs (default)" in out and "reference" in out and "read" in out
    assert err == ""


def test_check_prints_validation_error_and_exits_one(write_config, capsys) -> None:
    cfg = write_config(roots_toml(("docs", "missing", "reference"), audit_log=None))
    assert main(["--check", "--config", str(cfg)]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert "root 'docs': path does not exist" in err


def test_console_script_check_runs(tmp_path: Path, write_config) -> None:
    (tmp_path / "docs").mkdir()
    cfg = write_config(roots_toml(("docs", tmp_path / "docs", "reference"), audit_log=None))
    exe = Path(sys.executable).parent / "loom-fs-mcp"
    proc = subprocess.run(
        [str(exe), "--check", "--config", str(cfg)], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    assert "docs" in proc.stdout


def _check(cfg: Path) -> list[str]:
    exe = Path(sys.executable).parent / "loom-fs-mcp"
    proc = subprocess.run(
        [str(exe), "--check", "--config", str(cfg)], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    return [line for line in proc.stdout.splitlines() if line.startswith("search index")]


def _listing(folder: Path) -> dict[str, int]:
    return {p.name: p.stat().st_size for p in folder.iterdir()} if folder.exists() else {}


def test_check_reports_each_roots_trigram_index_from_its_file(
    tmp_path: Path, write_config, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--check` says, per root, what the index file holds (files, bytes, complete or not),
    read without writing: no file made when there is none, none beside one that exists."""
    top = tmp_path / "ws"
    top.mkdir()
    for i in range(12):
        (top / f"f{i}.txt").write_text(f"line {i}\n")
    state = tmp_path / "state"
    cfg = write_config(roots_toml(("ws", top, "workspace"), audit_log=state / "audit.log",
                                  extra="search_index = true"))
    assert _check(cfg) == [
        "search index of root 'ws': not built yet (the first search_text call starts it)"]
    assert _listing(state / "index") == {}
    snap = Registry(str(cfg)).current
    root = snap.roots["ws"]
    path = corpus_trigram.index_path(snap, root)
    idx = trigram.TrigramIndex(path)
    stop, real = threading.Event(), trigram_build.FileText
    reads: list[int] = []

    def read(fd: int, limit: int) -> FileText:  # the build stopped after 5 files
        reads.append(fd)
        if len(reads) == 5:
            stop.set()
        return real(fd, limit)

    monkeypatch.setattr(trigram_build, "FileText", read)
    built = Build(idx, root, corpus_trigram.identity(snap, root), stop).run()
    assert not built.complete and built.indexed == 5
    before = _listing(state / "index")
    held = sum(before.get(Path(p).name, 0) for p in shards.paths(path))  # its shards' files
    assert held > before[Path(path).name]
    assert _check(cfg) == [f"search index of root 'ws': 5 files, {held} "
                           "bytes on disk, not complete (the next search resumes it)"]
    assert _listing(state / "index") == before  # nothing made, nothing changed
    assert Build(idx, root, corpus_trigram.identity(snap, root), threading.Event()).run().complete
    size = trigram.size_of(path)
    assert _check(cfg) == [f"search index of root 'ws': 12 files, {size} bytes on disk, complete"]
    # A server holds it open (its log beside it): read as a reader beside the server.
    con = trigram.open_db(path)
    con.execute("INSERT INTO files (path, state) VALUES ('extra', 0)")
    assert os.path.exists(path + "-wal")
    lines = _check(cfg)
    con.close()
    assert lines[0].startswith("search index of root 'ws': 13 files, ")


def test_check_says_nothing_of_an_index_when_it_is_off(tmp_path: Path, write_config) -> None:
    (tmp_path / "ws").mkdir()
    cfg = write_config(roots_toml(("ws", tmp_path / "ws", "workspace"),
                                  audit_log=tmp_path / "state" / "audit.log"))
    assert _check(cfg) == []

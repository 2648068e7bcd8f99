from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from app.cli import main
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

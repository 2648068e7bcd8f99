"""Project-level promises: the two set-up commands, CI, the Dockerfile."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def test_readme_starts_with_exactly_the_two_setup_commands() -> None:
    text = (REPO / "README.md").read_text()
    first_block = re.search(r"```bash\n(.*?)```", text, re.S)
    assert first_block is not None
    commands = [
        line.split("#")[0].strip()
        for line in first_block.group(1).splitlines()
        if line.split("#")[0].strip()
    ]
    # The server stays in the foreground: last, so that the block pasted whole runs both.
    assert commands == ["./run_tests.sh", "./start_http.sh"]
    assert text.index("./start_http.sh") < text.index("## Roles")


def test_readme_says_what_the_test_command_installs_before_it_is_run() -> None:
    """The Set up section, before the first other section, names the prerequisites and each
    thing `./run_tests.sh` installs (and where), which it also says on stderr as it goes."""
    setup = " ".join(
        (REPO / "README.md").read_text().split("## Set up\n", 1)[1].split("\n## ", 1)[0].split()
    )
    for needed in ("**Prerequisites.**", "Python ≥ 3.10", "`venv` module", "WSL2",
                   "test extras", "Node 22", "MCP conformance suite", "MCP Inspector",
                   "`.ci-cache/node-tools` (git-ignored", "ripgrep from apt", "never asking",
                   "in another terminal"):
        assert needed in setup, needed


def test_ci_runs_the_readme_test_command() -> None:
    ci = (REPO / ".ci" / "run").read_text()
    assert "./run_tests.sh" in ci


def test_dockerfile_passes_hadolint() -> None:
    exe = shutil.which("hadolint") or str(Path(sys.executable).parent / "hadolint")
    proc = subprocess.run(
        [exe, str(REPO / "Dockerfile")], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_dockerfile_mirrors_start_http() -> None:
    docker = (REPO / "Dockerfile").read_text()
    start = (REPO / "start_http.sh").read_text()
    assert "--transport http" in start.replace('"', "")
    assert '"--transport", "http"' in docker
    assert "HEALTHCHECK" in docker and "/healthz" in docker
    assert re.search(r"^USER \d+", docker, re.M), "runs as a non-root user"
    assert "--allow-remote" in docker  # a container binds 0.0.0.0: needs the token too


def test_example_config_is_valid_as_shipped() -> None:
    from app import config

    loaded = config.load(REPO / "config" / "roots.example.toml")
    assert [r.role for r in loaded.roots] == ["reference"]


@pytest.mark.slow  # mypy over the whole tree from a fresh clone: ~45 s on two cores
def test_ruff_and_mypy_are_clean() -> None:
    bin_dir = Path(sys.executable).parent
    ruff = subprocess.run([str(bin_dir / "ruff"), "check", "app", "tests", "benchmarks"],
                          cwd=REPO, capture_output=True, text=True, timeout=120)
    assert ruff.returncode == 0, ruff.stdout
    mypy = subprocess.run([str(bin_dir / "mypy"), "app", "tests", "benchmarks"], cwd=REPO,
                          capture_output=True, text=True, timeout=300)
    assert mypy.returncode == 0, mypy.stdout

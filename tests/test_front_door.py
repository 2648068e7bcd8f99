"""The front door, as a new user meets it: run_tests.sh says what it installs before it does
and never asks; Windows gets a working path through WSL2, which the refusal message, the
PowerShell script and docs/clients.md agree on; the shell scripts keep LF line endings."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from app import cli
from app.cli import build_parser
from tests import patchkit
from tests.live import env_without_loomfs

REPO = Path(__file__).resolve().parents[1]
CLIENTS = REPO / "docs" / "clients.md"
SECTION = re.compile(r'docs/clients\.md, "([^"]+)"')


def headings(page: Path) -> list[str]:
    return re.findall(r"^## (.+)$", page.read_text(), re.M)


# -- the refusal on a platform without dir_fd ------------------------------------------------


@pytest.mark.parametrize(
    ("platform", "points_at_wsl"), [("win32", True), ("linux", False), ("sunos5", False)]
)
def test_the_refusal_names_wsl_on_windows_only(
    platform: str, points_at_wsl: bool, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    """The real command line, up to the refusal, on a platform faked to lack dir_fd."""
    (tmp_path / "notes").mkdir()
    config = tmp_path / "roots.toml"
    config.write_text('[[roots]]\nname = "notes"\npath = "notes"\nrole = "reference"\n')
    monkeypatch.setattr(os, "supports_dir_fd", set())
    monkeypatch.setattr(sys, "platform", platform)
    assert cli.main(["--config", str(config)]) == 1
    err = capsys.readouterr().err
    assert "refusing to serve rather than fall back to path-string checks" in err
    named = SECTION.findall(err)
    assert named == (["Windows (WSL2)"] if points_at_wsl else [])
    for name in named:  # the section the message sends a Windows user to is there
        assert name in headings(CLIENTS)


def test_start_http_ps1_runs_the_server_in_wsl_or_says_how() -> None:
    """PowerShell cannot run here: what it runs and the section it names are checked as text."""
    ps1 = (REPO / "start_http.ps1").read_text()
    assert re.search(r"^& wsl\.exe -e bash \./start_http\.sh @args$", ps1, re.M)
    assert re.search(r"^exit \$LASTEXITCODE$", ps1, re.M)
    assert "wsl --install" in ps1
    assert set(SECTION.findall(ps1)) == {"Windows (WSL2)"} <= set(headings(CLIENTS))
    assert "loom-fs-mcp.exe" not in ps1  # no native server: it would only refuse


def wsl_section() -> str:
    text = CLIENTS.read_text()
    start = text.index("## Windows (WSL2)\n")
    return text[start : text.index("\n## ", start + 1)]


async def test_the_wsl_claude_desktop_config_starts_the_server_over_stdio(
    tmp_path: Path,
) -> None:
    """`wsl.exe -e PROGRAM ARGS...` execs PROGRAM in Linux with ARGS, no shell: replayed here
    as that exec, with the placeholders filled in."""
    (body,) = re.findall(r"^```jsonc\n(.*?)^```", wsl_section(), re.M | re.S)
    entry = json.loads(body)["mcpServers"]["loom-fs"]
    assert entry["command"] == "wsl.exe"
    flag, program, *args = entry["args"]
    assert flag == "-e"
    home = "/home/<you>/loom-fs-mcp"
    assert program == f"{home}/.venv/bin/loom-fs-mcp"
    parsed = build_parser().parse_args(args)
    assert (parsed.config, parsed.transport) == (f"{home}/config/roots.toml", "stdio")
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "a.md").write_text("hello\n")
    config = tmp_path / "roots.toml"
    config.write_text(f'[[roots]]\nname = "notes"\npath = "{tmp_path / "notes"}"\n'
                      'role = "reference"\n')
    exe = shutil.which("loom-fs-mcp", path=os.path.dirname(sys.executable))
    assert exe is not None
    params = StdioServerParameters(
        command=program.replace(f"{home}/.venv/bin/loom-fs-mcp", exe),
        args=[a.replace(f"{home}/config/roots.toml", str(config)) for a in args],
        cwd=str(tmp_path),
        env=env_without_loomfs(),  # the SDK's default keeps no XDG_STATE_HOME: the real home
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
        await s.initialize()
        res = await s.call_tool("list_roots", {})
    assert res.structured_content is not None
    assert res.structured_content["roots"][0]["name"] == "notes"


def test_the_wsl_section_gives_roots_http_and_the_token_from_windows() -> None:
    text = " ".join(wsl_section().split())
    assert 'path = "/mnt/c/Users/<you>/' in text
    assert "http://localhost:8000/mcp" in text
    assert "wsl.exe -e sh -c 'cat $HOME/.local/state/loom-fs-mcp/token'" in text


def test_every_shell_script_keeps_lf_line_endings_in_any_checkout() -> None:
    """A Windows checkout (core.autocrlf) would give start_http.sh CRs that bash in WSL
    reads as part of each command."""
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True,
                             check=True).stdout.decode().split("\0")
    scripts = [f for f in tracked if f and (REPO / f).is_file()
               and (REPO / f).read_bytes()[:2] == b"#!"]
    assert "start_http.sh" in scripts
    attrs = subprocess.run(["git", "check-attr", "eol", "--", *scripts], cwd=REPO,
                           capture_output=True, text=True, check=True).stdout
    assert attrs.splitlines() == [f"{f}: eol: lf" for f in scripts]


# -- run_tests.sh on a fresh machine, its installers faked -----------------------------------

# Each fake appends what it was asked to the log run_tests.sh's stderr also goes to (both
# O_APPEND: one order). The fakes make what the real tools would leave behind.
FAKE_PYTHON = r"""#!/bin/bash
case "$*" in *hashlib*) exec "$REAL_PYTHON" "$@" ;; esac  # a hash check: the real thing
case "$*" in *pytest*) ;; *) echo "RAN python $*" >>"$LOG" ;; esac
[ "$1 $2" = "-m venv" ] && mkdir -p "$3/bin" && cp "$0" "$3/bin/python"
exit 0
"""
FAKE_APT = r"""#!/bin/bash
echo "RAN apt-get $* DEBIAN_FRONTEND=$DEBIAN_FRONTEND stdin=$(readlink /proc/self/fd/0)" >>"$LOG"
case "$*" in
  *"install"*ripgrep*) printf '#!/bin/bash\n' >"$FAKEBIN/rg" && chmod +x "$FAKEBIN/rg" ;;
  *"install"*chromium*) for b in chromium chromedriver; do
      printf '#!/bin/bash\n' >"$FAKEBIN/$b" && chmod +x "$FAKEBIN/$b"; done ;;
esac
"""
FAKE_NPM = r"""#!/bin/bash
echo "RAN npm $*" >>"$LOG"
prefix=""; specs=()
while [ $# -gt 0 ]; do
  case "$1" in --prefix) prefix=$2; shift ;; install|--*) ;; *) specs+=("$1") ;; esac; shift
done
for spec in "${specs[@]}"; do
  m="$prefix/node_modules/${spec%@*}"
  case "$spec" in
    node-linux-*) mkdir -p "$m/bin" && cp "$FAKEBIN/node" "$m/bin/node" ;;
    *conformance*) mkdir -p "$m/dist" && : >"$m/dist/index.js" ;;
    *inspector*) mkdir -p "$m/clients/launcher/build" && : >"$m/clients/launcher/build/index.js" ;;
  esac
done
"""
# The machine's node is too old; the downloaded one (under node-linux-*) is new enough.
FAKE_NODE = r"""#!/bin/bash
case "$1" in
  -e) case "$0" in *node-linux-*) exit 0 ;; *) exit 1 ;; esac ;;
  *) echo v22.99.0 ;;
esac
"""
REAL_TOOLS = ["bash", "cat", "cmp", "cp", "chmod", "dirname", "mkdir", "readlink", "rm", "uname"]

# What each install step is, and the words the line announcing it must hold.
STEPS = [
    (r"^RAN python -m venv", "creating .venv"),
    (r"^RAN python -m pip install .*--upgrade pip", "loom-fs-mcp"),
    (r"^RAN apt-get install .*ripgrep", "ripgrep"),
    (r"^RAN apt-get install .*chromium", "chromium"),
    (r"^RAN npm install .* node-linux-\w+@22", "Node 22"),
    (r"^RAN npm install .* @modelcontextprotocol/conformance@0\.1", "suite and Inspector"),
    (r"^RAN npm install .* @modelcontextprotocol/conformance@0\.2", "next MCP conformance suite"),
]


def fresh_machine(tmp_path: Path, uid: int) -> tuple[Path, dict[str, str]]:
    """A copy of the scripts in a folder with no .venv, and a PATH with npm but no rg, no node
    new enough, apt-get, and `id -u` answering `uid`. The real-patch corpus is already there
    (a copy of this checkout's, hash-checked by the real python): its download is
    tests/test_patchkit.py's to check, this machine has no network."""
    repo = tmp_path / "repo"
    (repo / "scripts").mkdir(parents=True)
    for name in ("run_tests.sh", "scripts/install_node.sh", "scripts/fetch_patch_corpus.sh",
                 "pyproject.toml"):
        shutil.copy2(REPO / name, repo / name)
    corpus = tmp_path / "patch-corpus"
    corpus.mkdir()
    for sdist in patchkit.sdists():
        shutil.copy2(sdist, corpus / sdist.name)
    fakebin = tmp_path / "bin"
    fakebin.mkdir()
    for tool in REAL_TOOLS:
        real = shutil.which(tool)
        assert real is not None, tool
        (fakebin / tool).symlink_to(real)
    fakes = {"python3": FAKE_PYTHON, "apt-get": FAKE_APT, "npm": FAKE_NPM, "node": FAKE_NODE,
             "id": f"#!/bin/bash\necho {uid}\n"}
    for name, body in fakes.items():
        (fakebin / name).write_text(body)
        (fakebin / name).chmod(0o755)
    env = {"PATH": str(fakebin), "HOME": str(tmp_path), "LOG": str(tmp_path / "log"),
           "FAKEBIN": str(fakebin), "LOOMFS_PATCH_CORPUS": str(corpus),
           "REAL_PYTHON": sys.executable}
    return repo, env


def run_tests_sh(repo: Path, env: dict[str, str]) -> list[str]:
    """run_tests.sh with no terminal and a stdin it must not pass on (a terminal's would
    answer a prompt); its stderr and the fakes' log."""
    log = Path(env["LOG"])
    log.write_text("")
    with log.open("ab") as err:
        proc = subprocess.run([str(repo / "run_tests.sh"), "-q"], env=env, input=b"y\n" * 8,
                              stdout=subprocess.DEVNULL, stderr=err, timeout=60)
    lines = log.read_text().splitlines()
    assert proc.returncode == 0, lines
    return lines


def announcement_before(lines: list[str], i: int) -> str:
    """The line just before the run of RAN lines that holds line i."""
    while i > 0 and lines[i - 1].startswith("RAN "):
        i -= 1
    return lines[i - 1] if i > 0 else ""


def test_run_tests_says_what_it_installs_and_why_before_it_does(tmp_path: Path) -> None:
    repo, env = fresh_machine(tmp_path, uid=0)
    lines = run_tests_sh(repo, env)
    ran = [i for i, line in enumerate(lines) if line.startswith("RAN ")]
    assert ran, lines
    for i in ran:  # every install step comes after a line saying what it is about to do
        said = announcement_before(lines, i)
        assert re.match(r"(run_tests|install_node)\.sh: ", said), (lines[i], lines)
    for pattern, words in STEPS:
        (i,) = [i for i, line in enumerate(lines) if re.match(pattern, line)]
        assert words in announcement_before(lines, i), (pattern, lines)
    # Never a prompt: pip may not ask, apt-get answers yes and reads nothing.
    assert all("--no-input" in line for line in lines if line.startswith("RAN python -m pip"))
    apt = [line for line in lines if line.startswith("RAN apt-get")]
    assert apt and all("DEBIAN_FRONTEND=noninteractive stdin=/dev/null" in line for line in apt)
    assert all(" -y " in line for line in apt if " install " in line)
    # A second run finds it all in place: it installs nothing and says nothing of installing.
    again = run_tests_sh(repo, env)
    assert [line for line in again if line.startswith("RAN ")] == [], again
    assert len(again) == 1 and again[0].startswith("install_node.sh: node v22.99.0"), again


def test_run_tests_says_ripgrep_tests_will_be_skipped_when_it_cannot_install_it(
    tmp_path: Path,
) -> None:
    """Not root: no apt-get (and no sudo, which could ask for a password), one line saying so."""
    repo, env = fresh_machine(tmp_path, uid=1000)
    lines = run_tests_sh(repo, env)
    assert not [line for line in lines if line.startswith("RAN apt-get")]
    assert ("run_tests.sh: ripgrep (rg) is not installed: the tests that compare searches "
            "against it will be skipped") in lines


# -- the editable install, as the scripts run it ---------------------------------------------

EDITABLE_NOTICE = "same name as your package"  # setuptools' notice for an editable install


def scripts_warning_filter() -> str:
    found = {re.findall(r'PYTHONWARNINGS="([^"]+)"', (REPO / name).read_text())[0]
             for name in ("run_tests.sh", "start_http.sh")}
    (only,) = found
    return only


@pytest.mark.slow  # a venv, a pip upgrade and two builds of the package: about a minute
def test_the_editable_install_prints_no_setuptools_notice(tmp_path: Path) -> None:
    """The pip commands of run_tests.sh and start_http.sh (--no-deps: this package only), in a
    new venv whose pip is upgraded as they upgrade it (older pips hide a build's warnings). The
    control, without the filter, shows the notice is still the one the filter drops: when a
    setuptools release rewords it, the filter needs its new words."""
    src = tmp_path / "src"
    shutil.copytree(REPO / "app", src / "app", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, src / name)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--no-input",
           "--disable-pip-version-check"]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONWARNINGS"}
    subprocess.run([*pip, "--upgrade", "pip"], env=env, check=True, capture_output=True,
                   timeout=300)
    for filtered in (False, True):
        proc = subprocess.run(
            [*pip, "--no-deps", "--force-reinstall", "-e", str(src)],
            env={**env, "PYTHONWARNINGS": scripts_warning_filter()} if filtered else env,
            capture_output=True, text=True, timeout=300,
        )
        assert proc.returncode == 0, proc.stderr
        said = " ".join(proc.stderr.split())
        assert (EDITABLE_NOTICE in said) is not filtered, (filtered, proc.stderr)

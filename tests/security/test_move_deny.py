"""Moving an ancestor never carries a `/`-pattern-denied path out of its pattern.

The issue's case through the live server, then a table of moves: refused (with
the pattern named, nothing changed, a DENY audit line) when something below
would stop being denied, allowed when it stays denied or nothing a pattern
names is below. The state machine in tests/test_state_machine.py generates the
sequences; this file pins the decisions.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

import anyio
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from app.errors import DeniedName
from app.fs.change import move, trash
from app.fs.reading import read as read_mod
from app.security.deny import DenyRules
from tests.kit import roots_toml
from tests.live import LiveServer, live_server
from tests.security.conftest import make_root

DENY = ["config/prod.yaml", "a/b", "con*/keys/*.txt", "*/deep.yaml"]
FILES = {
    "config/prod.yaml": "SECRET-1",
    "config/dev.yaml": "dev",
    "config/keys/k.txt": "SECRET-2",
    "a/b/c/x.txt": "SECRET-3",
    "a/ok.txt": "ok",
    "p/q/deep.yaml": "SECRET-4",
    "src/main.py": "print(1)",
}

CASES = [
    # (source, destination, refused by pattern or None when allowed)
    ("config", "config2", "config/prod.yaml"),
    ("config", "src/config", "config/prod.yaml"),
    ("a", "z", "a/b"),
    ("a", "src/a", "a/b"),
    ("config/keys", "src/keys", "con*/keys/*.txt"),
    ("src", "src2", None),  # nothing denied below
    ("p", "p2", None),  # */deep.yaml still denies p2/q/deep.yaml
    ("p/q", "r", None),  # r/deep.yaml: still denied by */deep.yaml
]


@pytest.mark.parametrize(("src", "dst", "pattern"), CASES)
def test_moving_an_ancestor_of_a_denied_path(
    tmp_path: Path, src: str, dst: str, pattern: str | None
) -> None:
    top = tmp_path / "root"
    for rel, text in FILES.items():
        (top / rel).parent.mkdir(parents=True, exist_ok=True)
        (top / rel).write_text(text)
    lines: list[tuple] = []
    root = make_root(top, deny=DENY, audit=lambda *a: lines.append(a))
    before = sorted(str(p.relative_to(top)) for p in top.rglob("*"))
    if pattern is None:
        move.move_file(root, src, dst)
        assert (top / dst).is_dir() and not (top / src).exists()
        return
    with pytest.raises(DeniedName) as info:
        move.move_file(root, src, dst)
    assert f"deny pattern '{pattern}'" in info.value.message
    assert "nothing was moved" in info.value.message
    assert sorted(str(p.relative_to(top)) for p in top.rglob("*")) == before
    assert lines[-1][0] == "DENY" and lines[-1][2] == src


def test_deleting_an_ancestor_keeps_the_content_denied(tmp_path: Path) -> None:
    top = tmp_path / "root"
    (top / "config").mkdir(parents=True)
    (top / "config" / "prod.yaml").write_text("SECRET")
    root = make_root(top, deny=["config/prod.yaml"])
    out = trash.delete(root, "config")
    assert out.trashed_to.startswith(".mcp-trash/")
    with pytest.raises(DeniedName):
        read_mod.read_text_file(root, out.trashed_to + "/prod.yaml", start=1, end=5, tail=None,
                                cap=1000)


Calls = tuple[tuple[str, dict[str, str]], ...]


def _answers(srv: LiveServer, calls: Calls) -> list[tuple[bool, str]]:
    """(is an error, text) of each tool call, in one session, in order."""

    async def main() -> list[tuple[bool, str]]:
        out = []
        async with srv.session() as s:
            for name, args in calls:
                r = await s.call_tool(name, args)
                out.append((bool(r.is_error), " ".join(getattr(c, "text", "")
                                                       for c in r.content)))
        return out

    return anyio.run(main)


def test_the_issue_sequence_over_http(tmp_path: Path) -> None:
    """Root `src` (sourcecode) with deny = ["config/prod.yaml"]: move config -> config2,
    then read config2/prod.yaml."""
    top = tmp_path / "src"
    (top / "config").mkdir(parents=True)
    (top / "config" / "prod.yaml").write_text("password: SECRET\n")
    cfg = tmp_path / "loom.toml"
    cfg.write_text(roots_toml(("src", top, "sourcecode", {"deny": ["config/prod.yaml"]}),
                              audit_log=tmp_path / "state" / "audit.log"))
    with live_server(cfg) as srv:
        answers = _answers(srv, (
            ("read_text_file", {"path": "config/prod.yaml"}),
            ("move_file", {"source": "config", "destination": "config2"}),
            ("read_text_file", {"path": "config2/prod.yaml"}),
            ("search_text", {"query": "SECRET"}),
        ))
    assert answers[0][0] and "matches deny pattern 'config/prod.yaml'" in answers[0][1]
    assert answers[1][0] and "deny pattern 'config/prod.yaml'" in answers[1][1]
    assert answers[2][0]  # config2 does not exist: nothing moved
    assert all("SECRET" not in text for _, text in answers)
    assert (top / "config" / "prod.yaml").exists() and not (top / "config2").exists()
    log = (tmp_path / "state" / "audit.log").read_text()
    assert "DENY root=src path=config op=move_file" in log


# -- a folder the check cannot list: the move is refused, never waved through ----------


def _unlistable(monkeypatch: pytest.MonkeyPatch, top: Path, how: str) -> None:
    """vault/ made one the server may pass through but not list. `mode`: really mode 0311
    (root ignores mode bits, so only when not root); `injected`: every O_DIRECTORY open of
    a name `vault` fails with EACCES, as the kernel answers for mode 0311."""
    if how == "mode":
        (top / "vault").chmod(0o311)
        return
    real = os.open

    def refuse(path, flags, *args, **kwargs):
        if path == "vault" and flags & os.O_DIRECTORY:
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES))
        return real(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", refuse)


@pytest.mark.parametrize("how", [
    pytest.param("mode", marks=pytest.mark.skipif(os.geteuid() == 0,
                                                  reason="root lists a 0311 folder anyway")),
    "injected",
])
def test_a_folder_that_cannot_be_listed_is_not_moved_over_http(tmp_path, monkeypatch, how):
    """Root `ws2` (workspace), deny = ["/vault/prod.yaml"], vault/ traversable but not
    listable: reading vault/prod.yaml is refused naming the rule; moving vault -> v2 is
    refused with the reason; v2/prod.yaml does not exist."""
    top = tmp_path / "ws2"
    (top / "vault").mkdir(parents=True)
    (top / "vault" / "prod.yaml").write_text("password: SECRET\n")
    cfg = tmp_path / "loom.toml"
    cfg.write_text(roots_toml(("ws2", top, "workspace", {"deny": ["/vault/prod.yaml"]}),
                              audit_log=tmp_path / "state" / "audit.log"))
    with live_server(cfg) as srv:
        try:
            _unlistable(monkeypatch, top, how)
            answers = _answers(srv, (
                ("read_text_file", {"path": "vault/prod.yaml"}),
                ("move_file", {"source": "vault", "destination": "v2"}),
                ("read_text_file", {"path": "v2/prod.yaml"}),
            ))
        finally:
            monkeypatch.undo()
            (top / "vault").chmod(0o755)
    assert answers[0] == (True, "matches deny pattern 'vault/prod.yaml'")
    assert answers[1] == (True, (
        "cannot move 'vault' to 'v2': folder 'vault' cannot be opened (permission denied by "
        "the operating system), so it cannot be checked that the move exposes nothing "
        "denied; nothing was moved"))
    assert answers[2][0] and "SECRET" not in answers[2][1]
    assert (top / "vault" / "prod.yaml").exists() and not (top / "v2").exists()
    assert "DENY root=ws2 path=vault op=move_file" in (tmp_path / "state" / "audit.log").read_text()


# -- deep trees: the check must descend all the way -----------------------------------
# A check that stops after k levels passes every tree no deeper than k. These trees put
# the denied file 3 to 14 levels below the moved folder, under patterns whose wildcard
# spans any number of levels (`*` crosses `/` in a deny pattern).

_dir_name = st.sampled_from(["a", "b", "config", "lib", "x"])


@settings(max_examples=40, deadline=None)
@given(
    chain=st.lists(_dir_name, min_size=2, max_size=13),
    pattern=st.sampled_from(["src/*/prod.yaml", "src/*/config/prod.yaml", "src/a*/prod.yaml",
                             "s?c/*/prod.yaml"]),
    siblings=st.lists(st.lists(_dir_name, min_size=1, max_size=4), max_size=4),
)
@example(chain=["a", "config"], pattern="src/*/prod.yaml", siblings=[])  # the 3-level case
@example(chain=["a"] * 13, pattern="src/*/prod.yaml", siblings=[["b"], ["b", "c"]])
def test_a_denied_file_at_any_depth_stops_the_move(
    tmp_path_factory: pytest.TempPathFactory, chain: list[str], pattern: str,
    siblings: list[list[str]],
) -> None:
    top = tmp_path_factory.mktemp("deep")
    if pattern.endswith("config/prod.yaml"):
        chain = [*chain, "config"]
    if pattern.startswith("src/a*"):
        chain = ["a", *chain]
    for extra in siblings:  # folders beside the chain: the check must look past them too
        (top / "src").joinpath(*extra).mkdir(parents=True, exist_ok=True)
    secret = (top / "src").joinpath(*chain, "prod.yaml")
    secret.parent.mkdir(parents=True, exist_ok=True)
    secret.write_text("SECRET")
    root = make_root(top, deny=[pattern])
    assert root.rules.path(("src", *chain, "prod.yaml")) == pattern  # denied where it is
    with pytest.raises(DeniedName) as info:
        move.move_file(root, "src", "moved")
    assert f"deny pattern '{pattern}'" in info.value.message
    assert secret.exists() and not (top / "moved").exists()


# -- the pruning is conservative: never skips a folder a pattern could reach --------

_comp = st.sampled_from(["a", "b", "ab", "A", "a.", "conf", "config"])
_pat_piece = st.sampled_from(["a", "b", "ab", "conf", "*", "?", "[ab]", "con*", "A"])


@settings(max_examples=400, deadline=None)
@given(
    pattern=st.lists(_pat_piece, min_size=2, max_size=4).map("/".join),
    start=st.lists(_comp, min_size=1, max_size=2),
    below=st.lists(_comp, min_size=1, max_size=3),
)
def test_may_deny_below_never_misses_a_path_a_pattern_denies(
    pattern: str, start: list[str], below: list[str]
) -> None:
    """If a `/` pattern denies some path under `start` (and not `start` itself, which
    the move's own source check refuses), the move check must look below `start`."""
    rules = DenyRules(extra=[pattern])
    if rules.prefixes(start) is not None:
        return
    if rules.prefixes([*start, *below]) is not None:
        assert rules.may_deny_below(start), (pattern, start, below)

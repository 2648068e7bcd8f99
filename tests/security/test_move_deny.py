"""Moving an ancestor never carries a `/`-pattern-denied path out of its pattern.

The issue's case through the live server, then a table of moves: refused (with
the pattern named, nothing changed, a DENY audit line) when something below
would stop being denied, allowed when it stays denied or nothing a pattern
names is below. The state machine in tests/test_state_machine.py generates the
sequences; this file pins the decisions.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.errors import DeniedName
from app.fs import move, trash
from app.fs import read as read_mod
from app.security.deny import DenyRules
from tests.kit import roots_toml
from tests.live import live_server
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

        async def main() -> list[tuple[bool, str]]:
            out = []
            async with srv.session() as s:
                for name, args in (
                    ("read_text_file", {"path": "config/prod.yaml"}),
                    ("move_file", {"source": "config", "destination": "config2"}),
                    ("read_text_file", {"path": "config2/prod.yaml"}),
                    ("search_text", {"query": "SECRET"}),
                ):
                    r = await s.call_tool(name, args)
                    text = " ".join(getattr(c, "text", "") for c in r.content)
                    out.append((r.is_error, text))
            return out

        answers = anyio.run(main)
    assert answers[0][0] and "matches deny pattern 'config/prod.yaml'" in answers[0][1]
    assert answers[1][0] and "deny pattern 'config/prod.yaml'" in answers[1][1]
    assert answers[2][0]  # config2 does not exist: nothing moved
    assert all("SECRET" not in text for _, text in answers)
    assert (top / "config" / "prod.yaml").exists() and not (top / "config2").exists()
    log = (tmp_path / "state" / "audit.log").read_text()
    assert "DENY root=src path=config op=move_file" in log


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

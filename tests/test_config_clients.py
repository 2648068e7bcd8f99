"""`[[clients]]` in the config: every refusal names the client and the field and stops the
load (with no host path: `reload_config` may say it); tokens read or made at each load;
the start refuses a server token beside `[[clients]]`, naming both (docs/clients.md)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from app import startup
from app.cli import main
from app.config import load
from app.errors import ConfigError, LoomError
from app.registry import Registry
from tests.kit import config_file

ROOTS = """
[[roots]]
name = "docs"
path = "{tmp}/docs"
role = "reference"
[[roots]]
name = "repo"
path = "{tmp}/repo"
role = "sourcecode"
"""


@pytest.fixture
def place(tmp_path: Path, private_state_home: Path) -> Path:
    for d in ("docs", "repo", "secrets"):
        (tmp_path / d).mkdir()
    return tmp_path


def write(place: Path, clients: str) -> Path:
    return config_file(place, (ROOTS + clients).replace("{tmp}", str(place)))


def token(place: Path, rel: str, value: str) -> None:
    path = place / rel
    path.write_text(value + "\n")
    path.chmod(0o600)


REFUSED = [
    ('[[clients]]\nname = "Bad Name"\nroots = { docs = ["read"] }',
     "client 'Bad Name': name must match"),
    ('[[clients]]\nname = "a"\nroots = { docs = ["read"] }\n'
     '[[clients]]\nname = "a"\nroots = { repo = ["read"] }',
     "client 'a': name is used by two clients"),
    ('[[clients]]\nname = "a"\nroots = { nope = ["read"] }',
     "client 'a': roots: 'nope' is not a configured root (known: docs, repo)"),
    ('[[clients]]\nname = "a"\nroots = { docs = ["read", "write"] }',
     "client 'a': roots.docs: write is above what root 'docs' grants ([read])"),
    ('[[clients]]\nname = "a"\nroots = { repo = ["delete"] }',
     "client 'a': roots.repo: delete is above what root 'repo' grants ([read, write])"),
    ('[[clients]]\nname = "a"\nroots = {}', "client 'a': roots is empty"),
    ('[[clients]]\nname = "a"\nroots = { docs = [] }', "client 'a': roots.docs: permissions is"),
    ('[[clients]]\nname = "a"\nroots = { docs = ["rule"] }', "client 'a': roots.docs"),
    ('[[clients]]\nname = "a"\nroots = { docs = ["read"] }\ncolour = "red"',
     "client 'a': colour"),
    ('[[clients]]\nname = "a"\nroots = { docs = ["read"] }\n'
     'budget = { bytes_per_minute = 1, burst_bytes = 10 }',
     "client 'a': budget.burst_bytes (10) is below the largest call"),
]


@pytest.mark.parametrize(("clients", "said"), REFUSED)
def test_a_bad_clients_table_stops_the_load_naming_client_and_field(
    place: Path, clients: str, said: str
) -> None:
    with pytest.raises(ConfigError) as err:
        load(write(place, clients))
    assert said in err.value.message
    assert str(place) not in err.value.message


TOKEN_REFUSED = [
    ("a token file inside a root that grants write",
     '[[clients]]\nname = "a"\nroots = { docs = ["read"] }\ntoken_file = "{tmp}/repo/t"',
     {"repo/t": "tok-a"},
     "client 'a': token_file is inside root 'repo', which grants write"),
    ("two clients with one token",
     '[[clients]]\nname = "a"\nroots = { docs = ["read"] }\ntoken_file = "{tmp}/secrets/a"\n'
     '[[clients]]\nname = "b"\nroots = { repo = ["read"] }\ntoken_file = "{tmp}/secrets/b"',
     {"secrets/a": "same-token", "secrets/b": "same-token"},
     "client 'b': token is the same as client 'a''s"),
    ("a missing token file",
     '[[clients]]\nname = "a"\nroots = { docs = ["read"] }\ntoken_file = "{tmp}/secrets/no"',
     {}, "client 'a': token file: cannot be read"),
    ("an empty token file",
     '[[clients]]\nname = "a"\nroots = { docs = ["read"] }\ntoken_file = "{tmp}/secrets/a"',
     {"secrets/a": ""}, "client 'a': token file: empty"),
]


@pytest.mark.parametrize(("case", "clients", "files", "said"), TOKEN_REFUSED,
                         ids=[c[0] for c in TOKEN_REFUSED])
def test_a_bad_client_token_stops_the_load(
    place: Path, case: str, clients: str, files: dict[str, str], said: str
) -> None:
    for rel, value in files.items():
        token(place, rel, value)
    with pytest.raises(ConfigError) as err:
        Registry(str(write(place, clients)), client_tokens=True)
    assert said in err.value.message, case
    assert str(place) not in err.value.message


def test_a_token_file_in_a_read_only_root_is_allowed_and_never_served(place: Path) -> None:
    token(place, "docs/t", "tok-a")
    reg = Registry(str(write(place, '[[clients]]\nname = "a"\nroots = { docs = ["read"] }\n'
                             'token_file = "{tmp}/docs/t"')), client_tokens=True)
    view = reg.current.view("a")
    with pytest.raises(LoomError, match=r"deny pattern 't'|server's own files"):
        view.root("docs").open_file("t", op="read_text_file")


def test_tokens_are_made_once_private_and_match_their_client(
    place: Path, private_state_home: Path
) -> None:
    cfg = write(place, '[[clients]]\nname = "a"\nroots = { docs = ["read"] }\n'
                '[[clients]]\nname = "b"\nroots = { repo = ["read", "write"] }')
    reg = Registry(str(cfg), client_tokens=True)
    assert reg.made_now == {"a", "b"}
    folder = private_state_home / "loom-fs-mcp" / "tokens"
    assert stat.S_IMODE(os.stat(folder).st_mode) == 0o700
    made = {}
    for name in ("a", "b"):
        assert stat.S_IMODE(os.stat(folder / name).st_mode) == 0o600
        made[name] = (folder / name).read_text().strip()
    tokens = reg.current.tokens
    assert tokens is not None
    assert {tokens.match(made[n].encode()) for n in made} == {"a", "b"}
    assert tokens.match(b"not-a-token") is None
    again = Registry(str(cfg), client_tokens=True)
    assert again.made_now == set()
    assert again.current.tokens is not None and again.current.tokens.match(
        made["a"].encode()) == "a"


def test_a_reload_cannot_add_or_remove_clients(place: Path) -> None:
    cfg = write(place, '[[clients]]\nname = "a"\nroots = { docs = ["read"] }')
    reg = Registry(str(cfg), client_tokens=True)
    cfg.write_text(cfg.read_text().split("[[clients]]")[0])
    with pytest.raises(ConfigError, match="cannot be added to or removed"):
        reg.reload()
    assert reg.current.has_clients


def test_without_clients_nothing_changes(place: Path) -> None:
    reg = Registry(str(write(place, "")), client_tokens=True)
    snap = reg.current
    assert not snap.has_clients and snap.tokens is None
    assert snap.view(None) is snap


@pytest.mark.parametrize(("args", "env", "said"), [
    ([], {"LOOMFS_TOKEN": "t"}, "LOOMFS_TOKEN beside [[clients]]"),
    ([], {"LOOMFS_TOKEN_FILE": "/nonexistent/t"}, "LOOMFS_TOKEN_FILE beside [[clients]]"),
    (["--no-auth"], {}, "--no-auth beside [[clients]]"),
    (["--host", "0.0.0.0"], {}, "missing: --allow-remote"),
])
def test_a_server_token_beside_clients_stops_the_start_naming_both(
    place: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    args: list[str], env: dict[str, str], said: str,
) -> None:
    for name in [n for n in os.environ if n.startswith("LOOMFS_")]:
        monkeypatch.delenv(name)
    for name, value in env.items():
        monkeypatch.setenv(name, value)

    def served(*args: object) -> int:
        raise AssertionError("this start was served")

    monkeypatch.setattr(startup, "_serve_http", served)
    cfg = write(place, '[[clients]]\nname = "a"\nroots = { docs = ["read"] }')
    code = main(["--config", str(cfg), "--transport", "http", "--port", "0", *args])
    assert code == 2
    assert said in capsys.readouterr().err


def test_the_start_prints_each_client_and_where_its_token_is(
    place: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    for name in [n for n in os.environ if n.startswith("LOOMFS_")]:
        monkeypatch.delenv(name)
    token(place, "secrets/b", "tok-b")
    cfg = write(place, '[[clients]]\nname = "a"\nroots = { docs = ["read"] }\n'
                '[[clients]]\nname = "b"\nroots = { repo = ["read", "write"] }\n'
                'token_file = "{tmp}/secrets/b"')
    reg = Registry(str(cfg), client_tokens=True)
    startup.announce_clients(reg, "http://127.0.0.1:8000/mcp")
    err = capsys.readouterr().err
    assert "client a: docs [read]; token " in err and "(made now;" in err
    assert f"client b: repo [read, write]; token {place}/secrets/b (token_file;" in err
    assert "claude mcp add --transport http loom-fs-a http://127.0.0.1:8000/mcp" in err


def test_stdio_client_must_name_a_clients_table(
    place: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = write(place, '[[clients]]\nname = "a"\nroots = { docs = ["read"] }')
    assert main(["--config", str(cfg), "--client", "zz"]) == 2
    assert "--client" in capsys.readouterr().err


async def test_stdio_with_client_serves_that_grant_only(place: Path) -> None:
    from mcp import Client

    from app.server import LoomServer

    (place / "repo" / "r.txt").write_text("repo text")
    cfg = write(place, '[[clients]]\nname = "a"\nroots = { docs = ["read"] }')
    reg = Registry(str(cfg))
    reg.serves_client = "a"
    async with Client(LoomServer(reg)) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        assert "write_file" not in names
        res = await client.call_tool("read_text_file", {"root": "repo", "path": "r.txt"})
        assert res.is_error
        assert res.content[0].text == "unknown root 'repo'; known roots: docs"  # type: ignore[union-attr]


def test_a_made_token_deleted_is_made_anew_at_the_reload(
    place: Path, private_state_home: Path
) -> None:
    cfg = write(place, '[[clients]]\nname = "a"\nroots = { docs = ["read"] }')
    reg = Registry(str(cfg), client_tokens=True)
    path = private_state_home / "loom-fs-mcp" / "tokens" / "a"
    old = path.read_text().strip().encode()
    path.unlink()
    reg.reload()
    tokens = reg.current.tokens
    assert tokens is not None
    assert tokens.match(old) is None
    assert tokens.match(path.read_text().strip().encode()) == "a"


def test_check_prints_each_clients_grant(
    place: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = write(place, '[[clients]]\nname = "a"\nroots = { docs = ["read"], repo = ["read"] }')
    assert main(["--config", str(cfg), "--check"]) == 0
    assert "client a: docs [read], repo [read]\n" in capsys.readouterr().out


def test_a_call_no_request_named_a_client_for_sees_no_root_where_tokens_are_served(
    place: Path,
) -> None:
    """Fail closed: with the clients' tokens served (HTTP), no client named is no grant; on
    stdio without --client, every root."""
    from app.audit import current_grant
    from app.calls import granted

    cfg = write(place, '[[clients]]\nname = "a"\nroots = { docs = ["read"] }')
    served = Registry(str(cfg), client_tokens=True).current
    assert granted(served).roots == {}
    stdio = Registry(str(cfg)).current
    assert list(granted(stdio).roots) == ["docs", "repo"]
    token = current_grant.set("a")
    try:
        assert list(granted(served).roots) == ["docs"]
        assert list(granted(stdio).roots) == ["docs"]
    finally:
        current_grant.reset(token)

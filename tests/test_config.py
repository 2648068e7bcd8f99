"""The config file: every validation rule of docs/configuration.md, and the shapes that load.

Every refusal must name the field and the root (where a root is involved) and
must not quote a host path: `reload_config` sends these messages to the client.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from app import config as config_mod
from app.config import SENSITIVE_REFUSAL
from app.errors import ConfigError
from tests.kit import config_file


@pytest.fixture
def place(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """tmp/cfg (the config folder, with docs/ and proj/), tmp/data/ws/inner, tmp/file.txt."""
    for d in ("cfg/docs", "cfg/proj", "data/ws/inner", "home/docs", "state"):
        (tmp_path / d).mkdir(parents=True)
    (tmp_path / "file.txt").write_text("x")
    os.symlink(tmp_path / "data" / "ws" / "inner", tmp_path / "innerlink")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("LOOMFS_TEST_DATA", str(tmp_path / "data"))
    return tmp_path


def write(place: Path, body: str, name: str = "roots.toml", *, audit: bool = True) -> Path:
    return config_file(place, body.replace("{tmp}", str(place)), name, audit=audit)


def refusal(place: Path, body: str, name: str = "roots.toml") -> str:
    with pytest.raises(ConfigError) as err:
        config_mod.load(write(place, body, name))
    msg = err.value.message
    # Private paths: no host path in anything a client may see.
    for host in (str(place), os.path.realpath(place), os.path.expanduser("~")):
        assert host not in msg, msg
    return msg


DOCS = '[[roots]]\nname = "docs"\npath = "docs"\nrole = "reference"\n'

# (id, config body, fragments the message must contain: the rule, the field, the root)
REFUSALS = [
    # -- path: missing, not a directory, system trees -----------------------------------
    ("missing path", '[[roots]]\nname = "docs"\npath = "nope"\nrole = "reference"',
     ["root 'docs': path does not exist"]),
    ("absent path key", '[[roots]]\nname = "docs"\nrole = "reference"',
     ["root 'docs': path is required"]),
    ("non-directory path", '[[roots]]\nname = "docs"\npath = "{tmp}/file.txt"\nrole = "reference"',
     ["root 'docs': path is not a directory"]),
    ("root at /", '[[roots]]\nname = "all"\npath = "/"\nrole = "reference"',
     ["root 'all': path is / or a system tree"]),
    ("root at /proc", '[[roots]]\nname = "p"\npath = "/proc"\nrole = "reference"',
     ["root 'p': path is / or a system tree"]),
    ("root under /proc", '[[roots]]\nname = "p"\npath = "/proc/self"\nrole = "reference"',
     ["root 'p': path is / or a system tree"]),
    ("root at /sys", '[[roots]]\nname = "s"\npath = "/sys"\nrole = "reference"',
     ["root 's': path is / or a system tree"]),
    ("root at /dev", '[[roots]]\nname = "d"\npath = "/dev"\nrole = "reference"',
     ["root 'd': path is / or a system tree"]),
    # -- nested roots, after realpath ------------------------------------------------------
    ("nested roots",
     '[[roots]]\nname = "a"\npath = "{tmp}/data/ws"\nrole = "reference"\n'
     '[[roots]]\nname = "b"\npath = "{tmp}/data/ws/inner"\nrole = "reference"',
     ["roots 'a' and 'b' overlap", "path"]),
    ("nested through a symlink",
     '[[roots]]\nname = "a"\npath = "{tmp}/data/ws"\nrole = "reference"\n'
     '[[roots]]\nname = "b"\npath = "{tmp}/innerlink"\nrole = "reference"',
     ["roots 'a' and 'b' overlap", "path"]),
    ("outer root listed second",
     '[[roots]]\nname = "b"\npath = "{tmp}/innerlink"\nrole = "reference"\n'
     '[[roots]]\nname = "a"\npath = "{tmp}/data/ws"\nrole = "reference"',
     ["roots 'b' and 'a' overlap", "path"]),
    ("the same folder twice",
     '[[roots]]\nname = "a"\npath = "docs"\nrole = "reference"\n'
     '[[roots]]\nname = "b"\npath = "./docs/../docs"\nrole = "reference"',
     ["roots 'a' and 'b' overlap", "path"]),
    # -- names ------------------------------------------------------------------------------
    ("duplicate names",
     '[[roots]]\nname = "docs"\npath = "docs"\nrole = "reference"\n'
     '[[roots]]\nname = "docs"\npath = "proj"\nrole = "reference"',
     ["root 'docs': name is used by two roots"]),
    ("bad name: capitals", '[[roots]]\nname = "Docs"\npath = "docs"\nrole = "reference"',
     ["root 'Docs': name must match"]),
    ("bad name: space", '[[roots]]\nname = "my docs"\npath = "docs"\nrole = "reference"',
     ["root 'my docs': name must match"]),
    ("bad name: leading dash", '[[roots]]\nname = "-docs"\npath = "docs"\nrole = "reference"',
     ["root '-docs': name must match"]),
    ("bad name: too long", f'[[roots]]\nname = "{"a" * 33}"\npath = "docs"\nrole = "reference"',
     [f"root '{'a' * 33}': name must match"]),
    ("bad name: empty", '[[roots]]\nname = ""\npath = "docs"\nrole = "reference"',
     ["root '': name must match"]),
    # -- roles and permissions --------------------------------------------------------------
    ("unknown role", '[[roots]]\nname = "docs"\npath = "docs"\nrole = "admin"',
     ["root 'docs': role: 'admin' is not one of reference, sourcecode, workspace"]),
    ("absent role", '[[roots]]\nname = "docs"\npath = "docs"',
     ["root 'docs': role is required"]),
    ("write above reference",
     '[[roots]]\nname = "x"\npath = "docs"\nrole = "reference"\npermissions = ["read", "write"]',
     ["root 'x' (role reference) cannot be granted write", "permissions"]),
    ("delete above sourcecode",
     '[[roots]]\nname = "x"\npath = "docs"\nrole = "sourcecode"\npermissions = ["delete"]',
     ["root 'x' (role sourcecode) cannot be granted delete", "permissions"]),
    ("empty permissions",
     '[[roots]]\nname = "docs"\npath = "docs"\nrole = "workspace"\npermissions = []',
     ["root 'docs': permissions is empty"]),
    ("unknown permission",
     '[[roots]]\nname = "docs"\npath = "docs"\nrole = "workspace"\npermissions = ["admin"]',
     ["root 'docs': permissions: 'admin' is not one of read, write, delete"]),
    # -- allow naming a floor pattern ----------------------------------------------------------
    ("allow of a floor name", DOCS + 'allow = [".ssh"]',
     ["root 'docs': allow: '.ssh' would re-open the floor pattern '.ssh'"]),
    ("top-level allow of a floor name", 'allow = ["*.pem"]\n' + DOCS,
     ["root 'docs': allow: '*.pem' would re-open the floor pattern '*.pem'"]),
    # -- default_root ---------------------------------------------------------------------------
    ("unknown default_root", 'default_root = "nope"\n' + DOCS,
     ["default_root 'nope' is not a configured root", "known: docs"]),
    # -- the server's own files inside a root that grants write ---------------------------------
    ("config file inside a write root", '[[roots]]\nname = "here"\npath = "."\nrole = "sourcecode"',
     ["root 'here': grants write and contains the server's config file"]),
    ("config file inside a workspace root",
     '[[roots]]\nname = "up"\npath = ".."\nrole = "workspace"\npermissions = ["read", "delete"]',
     ["root 'up': grants delete and contains the server's config file"]),
    ("audit log inside a write root",
     'audit_log = "{tmp}/data/ws/logs/audit.log"\n'
     '[[roots]]\nname = "ws"\npath = "{tmp}/data/ws"\nrole = "workspace"',
     ["root 'ws': grants write, delete and contains the server's audit log (audit_log)"]),
    # -- no roots ----------------------------------------------------------------------------------
    ("empty roots", "roots = []", ["roots: at least one root is required"]),
    ("no roots key", "max_search_results = 10", ["roots is required"]),
    # -- sizes and counts: positive integers only ------------------------------------------------
    ("zero audit_log_max_bytes", "audit_log_max_bytes = 0\n" + DOCS,
     ["audit_log_max_bytes must be greater than 0"]),
    ("zero audit_log_backups", "audit_log_backups = 0\n" + DOCS,
     ["audit_log_backups must be greater than 0"]),
    ("negative max_search_results", "max_search_results = -5\n" + DOCS,
     ["max_search_results must be greater than 0"]),
    ("zero max_search_bytes", "max_search_bytes = 0\n" + DOCS,
     ["max_search_bytes must be greater than 0"]),
    ("float max_output_chars", "max_output_chars = 1.5\n" + DOCS,
     ["max_output_chars must be an integer"]),
    ("string max_search_bytes", 'max_search_bytes = "64M"\n' + DOCS,
     ["max_search_bytes must be an integer (got '64M')"]),
    ("boolean audit_log_backups", "audit_log_backups = true\n" + DOCS,
     ["audit_log_backups must be an integer"]),
    ("zero top-level max_read_bytes", "max_read_bytes = 0\n" + DOCS,
     ["max_read_bytes must be greater than 0"]),
    ("negative max_search_file_bytes", "max_search_file_bytes = -1\n" + DOCS,
     ["max_search_file_bytes must be greater than 0"]),
    ("zero root max_read_bytes", DOCS + "max_read_bytes = 0",
     ["root 'docs': max_read_bytes must be greater than 0"]),
    ("float root max_read_bytes", DOCS + "max_read_bytes = 1e6",
     ["root 'docs': max_read_bytes must be an integer"]),
    ("zero root trash_max_items", DOCS + "trash_max_items = 0",
     ["root 'docs': trash_max_items must be greater than 0"]),
    ("negative root trash_max_items", DOCS + "trash_max_items = -3",
     ["root 'docs': trash_max_items must be greater than 0"]),
    ("float root trash_max_items", DOCS + "trash_max_items = 2.5",
     ["root 'docs': trash_max_items must be an integer"]),
    ("string root trash_max_items", DOCS + 'trash_max_items = "10k"',
     ["root 'docs': trash_max_items must be an integer (got '10k')"]),
    # -- unknown keys are errors (extra="forbid") ----------------------------------------------
    ("unknown top-level key", "colour = 1\n" + DOCS, ["colour is not a known field"]),
    ("misspelt top-level key", "max_search_result = 1\n" + DOCS,
     ["max_search_result is not a known field"]),
    ("unknown root key", DOCS + "colour = 1",
     ["root 'docs': colour is not a known field"]),
    ("misspelt root key", DOCS + 'denny = ["*.tmp"]',
     ["root 'docs': denny is not a known field"]),
    # -- allow_sensitive_files = true: refused, with the reason and the way out -----------------
    ("allow_sensitive_files at the top", "allow_sensitive_files = true\n" + DOCS,
     [SENSITIVE_REFUSAL, "allow_sensitive_files"]),
    ("allow_sensitive_files on a root", DOCS + "allow_sensitive_files = true",
     [f"root 'docs': {SENSITIVE_REFUSAL}"]),
]  # fmt: skip


@pytest.mark.parametrize(
    ("body", "fragments"), [c[1:] for c in REFUSALS], ids=[c[0] for c in REFUSALS]
)
def test_refusal_names_the_rule_the_field_and_the_root(place: Path, body: str, fragments) -> None:
    msg = refusal(place, body)
    assert msg.startswith("invalid config: ")
    for fragment in fragments:
        assert fragment in msg
    # The server's words, not the validation library's.
    assert "Input should" not in msg and "http" not in msg and "pydantic" not in msg


def test_the_table_covers_every_rule() -> None:
    assert len(REFUSALS) >= 40


def test_sensitive_refusal_explains_why_and_points_at_allow() -> None:
    assert "no guarantee" in SENSITIVE_REFUSAL
    assert "allow" in SENSITIVE_REFUSAL


def test_a_read_only_root_may_hold_the_config_file(place: Path) -> None:
    loaded = config_mod.load(
        write(place, '[[roots]]\nname = "here"\npath = "."\nrole = "reference"')
    )
    assert loaded.roots[0].permissions == ("read",)
    # ... and the config file is then one of the files the agent can never reach.
    assert loaded.source in loaded.protected_files


def test_a_file_that_is_not_there_or_not_toml(place: Path) -> None:
    with pytest.raises(ConfigError) as err:
        config_mod.load(place / "cfg" / "absent.toml")
    assert err.value.message == "config: file not found"
    msg = refusal(place, "roots = [")
    assert msg.startswith("config: not valid TOML")
    msg = refusal(place, "{", "roots.json")
    assert msg.startswith("config: not valid JSON")
    msg = refusal(place, "[]", "roots.json")
    assert msg == "config: the top level must be a table/object"


# -- what loads ---------------------------------------------------------------------------


def test_a_full_toml_config_loads_with_its_defaults(place: Path) -> None:
    cfg = write(
        place,
        """
        default_root = "docs"
        max_search_results = 50
        deny = ["*.sqlite3"]
        search_fetch_tools = true

        [[roots]]
        name = "docs"
        path = "docs"
        role = "reference"

        [[roots]]
        name = "proj"
        path = "proj"
        role = "sourcecode"
        permissions = ["read"]
        deny = ["*.tmp"]
        allow = [".env"]
        max_read_bytes = 4096

        [[roots]]
        name = "ws"
        path = "{tmp}/data/ws"
        role = "workspace"
        """,
    )
    loaded = config_mod.load(cfg)
    docs, proj, ws = loaded.roots
    assert loaded.default_root == "docs"
    assert loaded.model.max_search_results == 50 and loaded.model.search_fetch_tools
    assert (docs.permissions, docs.max_read_bytes) == (("read",), 1 << 20)
    assert (proj.permissions, proj.max_read_bytes) == (("read",), 4096)
    assert (proj.deny, proj.allow) == (("*.sqlite3", "*.tmp"), (".env",))
    assert (ws.permissions, ws.max_read_bytes) == (("read", "write", "delete"), 8 << 20)
    assert docs.real == os.path.realpath(place / "cfg" / "docs")


def test_relative_paths_are_relative_to_the_config_folder(
    place: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cfg = write(place, DOCS.replace('"docs"\nrole', '"./docs/../proj"\nrole'))
    monkeypatch.chdir(place / "data")  # not the config folder
    assert config_mod.load(cfg).roots[0].real == os.path.realpath(place / "cfg" / "proj")


def test_tilde_and_variables_are_expanded(place: Path) -> None:
    cfg = write(
        place,
        '[[roots]]\nname = "home"\npath = "~/docs"\nrole = "reference"\n'
        '[[roots]]\nname = "data"\npath = "$LOOMFS_TEST_DATA/ws"\nrole = "reference"\n'
        '[[roots]]\nname = "braced"\npath = "${LOOMFS_TEST_DATA}/../cfg/docs"\nrole = "reference"',
    )
    home, data, braced = config_mod.load(cfg).roots
    assert home.real == os.path.realpath(place / "home" / "docs")
    assert data.real == os.path.realpath(place / "data" / "ws")
    assert braced.real == os.path.realpath(place / "cfg" / "docs")


def test_audit_log_path_is_expanded_and_relative_to_the_config(place: Path) -> None:
    cfg = write(place, 'audit_log = "logs/audit.log"\n' + DOCS)
    assert config_mod.load(cfg).audit_log == os.path.realpath(place / "cfg" / "logs" / "audit.log")


def test_default_audit_log_follows_xdg_state_home(
    place: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(place / "state"))
    cfg = write(place, DOCS, audit=False)
    assert config_mod.load(cfg).audit_log == str(place / "state" / "loom-fs-mcp" / "audit.log")


def test_a_single_root_is_the_default_and_several_need_one(place: Path) -> None:
    assert config_mod.load(write(place, DOCS)).default_root == "docs"
    two = DOCS + '[[roots]]\nname = "proj"\npath = "proj"\nrole = "reference"\n'
    assert config_mod.load(write(place, two)).default_root is None


def test_the_local_readonly_mcp_json_shape_loads_as_is(place: Path) -> None:
    body = {
        "default_root": "project",
        "max_read_bytes": 2097152,
        "max_search_file_bytes": 10485760,
        "max_output_chars": 65536,
        "allow_sensitive_files": False,
        "deny_patterns": ["*.log"],
        "allow_patterns": [".npmrc"],
        "audit_log": str(place / "state" / "audit.log"),
        "roots": {
            "project": "proj",
            "docs": {
                "path": "docs",
                "deny_patterns": ["*.tmp"],
                "allow_patterns": [".env", "*/.env"],
                "allow_sensitive_files": False,
            },
        },
    }
    loaded = config_mod.load(write(place, json.dumps(body), "config.json"))
    project, docs = loaded.roots
    assert loaded.default_root == "project"
    assert loaded.model.max_search_file_bytes == 10485760
    assert loaded.model.max_output_chars == 65536
    assert (project.name, project.role, project.permissions) == ("project", "reference", ("read",))
    assert project.real == os.path.realpath(place / "cfg" / "proj")
    assert project.max_read_bytes == docs.max_read_bytes == 2097152
    assert (project.deny, project.allow) == (("*.log",), (".npmrc",))
    assert docs.deny == ("*.log", "*.tmp")
    assert docs.allow == (".npmrc", ".env", "*/.env")


def test_the_minimal_local_readonly_mcp_json_loads(place: Path) -> None:
    body = {"default_root": "project", "roots": {"project": str(place / "cfg" / "proj")}}
    body["audit_log"] = str(place / "state" / "audit.log")
    loaded = config_mod.load(write(place, json.dumps(body), "config.json"))
    assert [r.name for r in loaded.roots] == ["project"]


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ({"roots": {"docs": {"path": "docs", "allow_sensitive_files": True}}},
         f"root 'docs': {SENSITIVE_REFUSAL}"),
        ({"allow_sensitive_files": True, "roots": {"docs": "docs"}}, SENSITIVE_REFUSAL),
        ({"roots": {"Docs": "docs"}}, "root 'Docs': name must match"),
        ({"roots": {"docs": "nope"}}, "root 'docs': path does not exist"),
        ({"roots": {"docs": {"path": "docs", "role": "reference", "permissions": ["write"]}}},
         "root 'docs' (role reference) cannot be granted write"),
        ({"roots": {"docs": {"path": "docs", "colour": 1}}},
         "root 'docs': colour is not a known field"),
        ({"roots": {"docs": "docs"}, "max_read_bytes": 0},
         "max_read_bytes must be greater than 0"),
        ({"roots": {}}, "roots: at least one root is required"),
    ],
    ids=["sensitive on a root", "sensitive at the top", "bad alias", "missing path",
         "above ceiling", "unknown root key", "zero size", "no roots"],
)  # fmt: skip
def test_the_json_shape_is_validated_like_toml(place: Path, body: dict, fragment: str) -> None:
    body["audit_log"] = str(place / "state" / "audit.log")
    msg = refusal(place, json.dumps(body), "config.json")
    assert fragment in msg

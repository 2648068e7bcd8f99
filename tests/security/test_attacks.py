"""The attack table: every request shape an agent might send, against a real tree.

Each case names the operation, the request and the outcome: the content read
(or the in-root target reached), or the exact refusal text, which names the
rule that bit. Every case runs through both resolution engines.

Layout (built once per module, all real files):

    <tmp>/root/            the root ("r", role workspace)
    <tmp>/outside/         secret.txt, .env, dir/secret.txt
    <tmp>/root-evil/, root2/, 'root "'/, 'root '/   prefix siblings, secret.txt each
    <tmp>/home/x           what `~/x` would be if anything expanded `~`
"""

from __future__ import annotations

import contextlib
import os
import socket
import stat
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from app import config as config_mod
from app.errors import ConfigError, LoomError
from tests.kit import roots_toml
from tests.security.conftest import make_root

ESC = "path escapes the root"
LOOP = "too many levels of symbolic links"
NOT_REG = "not a regular file"
SIBLINGS = ["root-evil", "root2", 'root "', "root "]


def deny(pattern: str) -> str:
    return f"matches deny pattern '{pattern}'"


def invalid(why: str) -> str:
    return f"invalid path: {why}"


def dots(comp: str) -> str:
    return invalid(f"the component {comp!r} is only dots and spaces (it may read as '.' or '..')")


def missing(rel: str) -> str:
    return f"no such file or directory: '{rel}'"


ABSOLUTE = invalid("absolute paths are not accepted; give a path relative to the root")
UNC = invalid("UNC paths are not accepted; give a path relative to the root")
DRIVE = invalid("drive letters are not accepted; give a path relative to the root")
BACKSLASH = invalid("contains a backslash; use '/' as the separator")
NUL = invalid("contains a NUL byte")
CONTROL = invalid("contains a control character")
TOO_LONG = invalid("a component is longer than 255 bytes")


@dataclass(frozen=True)
class Tree:
    base: Path
    root: Path
    outside: Path


@pytest.fixture(scope="module")
def attack_tree(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Tree]:
    base = tmp_path_factory.mktemp("attacks")
    root, outside = base / "root", base / "outside"
    for d in (root, outside, outside / "dir", base / "home"):
        d.mkdir()
    (outside / "secret.txt").write_text("OUTSIDE")
    (outside / ".env").write_text("OUTSIDE-ENV")
    (outside / "dir" / "secret.txt").write_text("OUTSIDE-DIR")
    (base / "home" / "x").write_text("HOME")
    for sib in SIBLINGS:
        (base / sib).mkdir()
        (base / sib / "secret.txt").write_text(f"SIBLING {sib}")

    def put(rel: str, text: str) -> None:
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)

    put("a.txt", "A")
    put("sub/f.txt", "F")
    put("sub/deeper/g.txt", "G")
    put("%2e%2e", "LITERAL")
    put("~x", "TILDE-NAME")
    for name in (".env", ".env.local", ".env.production", ".env.example.bak"):
        put(name, "SECRET")
    for name in (".env.example", ".env.sample", ".env.template"):
        put(name, f"TEMPLATE {name}")
    put("node_modules/pkg/index.js", "JS")
    put(".git/config", "GIT")
    put("sub/.env", "SECRET")

    def link(rel: str, target: str | Path) -> None:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        os.symlink(target, root / rel)

    # Links that leave the root.
    link("out_file", outside / "secret.txt")
    link("out_file_rel", "../outside/secret.txt")
    link("out_dir", "../outside")
    link("out_dir_abs", outside)
    link("chain1", "chain2")
    link("chain2", "sub/chain3")
    link("sub/chain3", "../../outside/secret.txt")
    link("dotdot", "..")
    link("sub/up_up", "../..")
    link("proc_out", f"/proc/self/root{outside}/secret.txt")
    link("proc_in", f"/proc/self/root{root.resolve()}/a.txt")
    link("proc_fd", "/proc/self/fd/0")
    link("env_out", "../outside/.env")
    for i, sib in enumerate(SIBLINGS):
        link(f"sib{i}_abs", base / sib / "secret.txt")
        link(f"sib{i}_rel", f"../{sib}/secret.txt")
        link(f"sib{i}_dir", base / sib)
    # Loops.
    link("loop_a", "loop_b")
    link("loop_b", "loop_a")
    link("self_loop", "self_loop")
    link("loop_dir", "loop_dir/x")
    # Links that stay inside.
    link("in_file", "a.txt")
    link("in_dir", "sub")
    link("sub/up", "..")
    link("abs_in", root.resolve() / "a.txt")
    link("abs_in_dir", root.resolve() / "sub")
    link("notes.txt", ".env")
    link("sub/notes.txt", "../.env")
    link("gitlink", ".git")
    link("to_nm", "node_modules/pkg/index.js")
    link("template_link", ".env.example")
    link("dangling", "nowhere")
    # Not regular files.
    os.mkfifo(root / "fifo")
    link("fifo_link", "fifo")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(str(root / "sock"))
    # Should a regression make opening the FIFO block, release it every few seconds so
    # the table fails on content instead of hanging; the timed FIFO test below catches it.
    stop = threading.Event()

    def release_fifo() -> None:
        while not stop.wait(3.0):
            with contextlib.suppress(OSError):
                os.close(os.open(root / "fifo", os.O_WRONLY | os.O_NONBLOCK))

    releaser = threading.Thread(target=release_fifo, daemon=True)
    releaser.start()
    try:
        yield Tree(base, root, outside)
    finally:
        stop.set()
        releaser.join(timeout=5)
        sock.close()


# Each case: (operation, request, expected). `read` is open_file, `dir` is
# open_dir, `write` is open_parent for a change. An expected string that is a
# refusal is compared to the whole message; anything else is `OK(...)`.


@dataclass(frozen=True)
class OK:
    value: str  # read: the content; dir and write: the in-root target


CASES = [
    # -- traversal: `..` is resolved lexically, and never climbs above the root --
    ("read", "..", ESC),
    ("dir", "..", ESC),
    ("read", "../outside/secret.txt", ESC),
    ("read", "a/../../outside/secret.txt", ESC),
    ("read", "./../outside/secret.txt", ESC),
    ("read", "sub/../../outside/secret.txt", ESC),
    ("read", "sub/deeper/../../../x", ESC),
    ("write", "../outside/new.txt", ESC),
    ("write", "sub/../../new.txt", ESC),
    ("dir", "sub/..", OK("")),
    ("read", "sub/../a.txt", OK("A")),
    ("read", "sub/./deeper/../f.txt", OK("F")),
    # URL-encoded and dotted lookalikes are plain names, decoded by nobody.
    ("read", "%2e%2e", OK("LITERAL")),
    ("read", "%2e%2e/secret.txt", "not a directory: '%2e%2e/secret.txt'"),  # it is a file
    ("read", "%2E%2E/%2E%2E/outside/secret.txt", missing("%2E%2E/%2E%2E/outside/secret.txt")),
    ("read", "..%2f..%2foutside%2fsecret.txt", missing("..%2f..%2foutside%2fsecret.txt")),
    # What only *reads* as `..` somewhere (HFS+ drops zero-width characters, Windows
    # trailing dots and spaces) never reaches the disk.
    ("read", "....//outside/secret.txt", dots("....")),
    ("read", ".../secret.txt", dots("...")),
    ("read", "..\u200b/outside/secret.txt", dots("..\u200b")),
    ("read", ".. /outside/secret.txt", dots(".. ")),
    ("read", "sub/ . /f.txt", dots(" . ")),
    ("read", "\uff0e\uff0e/outside/secret.txt", dots("\uff0e\uff0e")),  # fullwidth
    ("write", "..\u200b", dots("..\u200b")),
    ("read", "..a", missing("..a")),  # dots and more: a plain name
    # -- absolute paths and `~`: refused before the disk / a plain name ----------
    ("read", "/etc/passwd", ABSOLUTE),
    ("read", "/", ABSOLUTE),
    ("write", "/tmp/new.txt", ABSOLUTE),
    ("read", "~/x", missing("~/x")),
    ("read", "~", missing("~")),
    ("read", "~root/.bashrc", missing("~root/.bashrc")),
    ("read", "$HOME/x", missing("$HOME/x")),
    ("read", "~x", OK("TILDE-NAME")),
    # -- NUL, control characters, backslashes, drive letters, UNC -----------------
    ("read", "a.txt\x00", NUL),
    ("read", "\x00", NUL),
    ("read", "a.txt\x00/../x", NUL),
    ("read", "a\nb", CONTROL),
    ("read", "a\tb", CONTROL),
    ("read", "a\rb", CONTROL),
    ("read", "a\x1b[31m", CONTROL),
    ("read", "a\x7f", CONTROL),
    ("read", "a\x85b", CONTROL),
    ("read", "..\\outside\\secret.txt", BACKSLASH),
    ("read", "sub\\f.txt", BACKSLASH),
    ("read", "C:x", DRIVE),
    ("read", "c:/x", DRIVE),
    ("read", "C:\\Windows\\win.ini", BACKSLASH),
    ("read", "//server/share", UNC),
    ("read", "\\\\server\\share", UNC),
    ("read", "\\\\?\\C:\\x", UNC),
    # -- over-long components (bytes, not characters) -----------------------------
    ("read", "a" * 256, TOO_LONG),
    ("read", "sub/" + "x" * 300, TOO_LONG),
    ("read", "é" * 128, TOO_LONG),  # 256 bytes in UTF-8
    ("read", "😀" * 64, TOO_LONG),  # 256 bytes in UTF-8
    ("write", "b" * 256, TOO_LONG),
    ("read", "a" * 255, missing("a" * 255)),
    ("read", "é" * 127, missing("é" * 127)),  # 254 bytes: a legal name, absent
    ("read", "a/" * 2100, invalid("longer than 4096 characters")),
    # -- prefix-sibling roots: `root-evil` is not inside `root` -------------------
    *[("read", f"sib{i}_abs", ESC) for i in range(len(SIBLINGS))],
    *[("read", f"sib{i}_rel", ESC) for i in range(len(SIBLINGS))],
    *[("read", f"sib{i}_dir/secret.txt", ESC) for i in range(len(SIBLINGS))],
    *[("read", f"../{sib}/secret.txt", ESC) for sib in SIBLINGS],
    ("dir", "sib0_dir", ESC),
    # -- symlinks that leave: file, directory, chain, `..` link, /proc -------------
    ("read", "out_file", ESC),
    ("read", "out_file_rel", ESC),
    ("read", "out_dir/secret.txt", ESC),
    ("read", "out_dir/dir/secret.txt", ESC),
    ("dir", "out_dir", ESC),
    ("dir", "out_dir_abs", ESC),
    ("write", "out_dir/new.txt", ESC),
    ("write", "out_dir_abs/new.txt", ESC),
    ("read", "chain1", ESC),  # in -> in -> out
    ("read", "dotdot/outside/secret.txt", ESC),
    ("read", "sub/up_up/outside/secret.txt", ESC),
    ("read", "proc_out", ESC),
    ("read", "proc_in", ESC),  # a magic link, even when it lands inside
    ("read", "proc_fd", ESC),
    ("read", "env_out", ESC),  # confinement bites before deny
    # -- loops ---------------------------------------------------------------------
    ("read", "loop_a", LOOP),
    ("read", "self_loop", LOOP),
    ("read", "loop_dir/x", LOOP),
    ("dir", "loop_b", LOOP),
    # -- symlinks that stay inside are followed on explicit access -----------------
    ("read", "in_file", OK("A")),
    ("read", "in_dir/f.txt", OK("F")),
    ("read", "sub/up/a.txt", OK("A")),
    ("read", "sub/up/sub/up/in_dir/deeper/g.txt", OK("G")),
    ("read", "abs_in", OK("A")),
    ("read", "abs_in_dir/deeper/g.txt", OK("G")),
    ("read", "template_link", OK("TEMPLATE .env.example")),
    ("dir", "in_dir", OK("sub")),
    ("write", "in_dir/new.txt", OK("sub/new.txt")),
    ("read", "dangling", missing("dangling")),
    # ... unless the in-root target is denied: the deny list applies to it too.
    ("read", "notes.txt", deny(".env")),
    ("read", "sub/notes.txt", deny(".env")),
    ("read", "gitlink/config", deny(".git")),
    ("dir", "gitlink", deny(".git")),
    ("read", "to_nm", deny("node_modules")),
    # -- FIFOs and sockets are refused (and the FIFO open does not hang) -----------
    ("read", "fifo", NOT_REG),
    ("read", "fifo_link", NOT_REG),
    ("read", "sock", NOT_REG),
    ("read", "sub", "not a regular file: 'sub' is a directory"),
    # -- denied names: case, Unicode forms, ignorable and trailing characters ------
    ("read", ".env", deny(".env")),
    ("read", ".ENV", deny(".env")),
    ("read", ".Env", deny(".env")),
    ("read", "sub/.env", deny(".env")),
    ("read", "Node_Modules/pkg/index.js", deny("node_modules")),
    ("read", "NODE_MODULES", deny("node_modules")),
    ("read", ".e\u200bnv", deny(".env")),  # zero-width space, ignored by HFS+
    ("read", "\ufeff.env", deny(".env")),  # BOM / zero-width no-break space
    ("read", ".e\u202env", deny(".env")),  # right-to-left override
    ("read", ".env.", deny(".env")),  # trailing dot (Windows drops it)
    ("read", ".env ", deny(".env")),  # trailing space
    ("read", ".env. .", deny(".env")),
    ("read", "\uff0e\uff45\uff4e\uff56", deny(".env")),  # fullwidth, NFKC
    ("read", ".aw\u017f/credentials", deny(".aws")),  # long s, NFKC -> s
    ("read", ".GIT/config", deny(".git")),
    ("read", "ID_RSA", deny("id_rsa*")),
    ("read", "Server.PEM", deny("*.pem")),
    ("read", "Credentials.JSON", deny("credentials.json")),
    ("read", "Service-Account-prod.json", deny("service-account*.json")),
    ("read", ".mcp-trash/20260101T000000Z/a.txt", deny(".mcp-trash")),
    ("read", ".mcp-tmp-123abc", deny(".mcp-tmp-*")),
    ("read", "café.txt", deny("café*")),  # the root denies `café*` (NFC)
    ("read", "cafe\u0301.txt", deny("café*")),  # the same name in NFD
    ("read", "CAFE\u0301.TXT", deny("café*")),
    ("write", ".env", deny(".env")),
    ("write", "sub/.ENV", deny(".env")),
    ("write", ".git/hooks/pre-commit", deny(".git")),
    ("dir", "node_modules", deny("node_modules")),
    # Denied before the disk: a name that does not exist is still refused as denied.
    ("read", ".env/missing", deny(".env")),
    # -- template exceptions: `.env.example` and friends are readable --------------
    ("read", ".env.example", OK("TEMPLATE .env.example")),
    ("read", ".env.sample", OK("TEMPLATE .env.sample")),
    ("read", ".env.template", OK("TEMPLATE .env.template")),
    ("read", ".ENV.EXAMPLE", missing(".ENV.EXAMPLE")),  # allowed by the rules, absent on disk
    ("read", ".env.local", deny(".env.*")),
    ("read", ".env.production", deny(".env.*")),
    ("read", ".env.example.bak", deny(".env.*")),
]


def _run(root, op: str, path: str) -> str:
    if op == "read":
        with root.open_file(path, op="read_text_file") as f:
            return os.read(f.fd, 1 << 16).decode()
    if op == "dir":
        with root.open_dir(path, op="list_directory") as d:
            return d.target
    with root.open_parent(path, op="write_file", perm="write") as p:
        return p.target


def _ids() -> list[str]:
    return [f"{i:03d}-{op}-{path[:40]!r}" for i, (op, path, _) in enumerate(CASES)]


def test_the_table_is_big_enough() -> None:
    assert len(CASES) >= 60


@pytest.mark.parametrize(("op", "path", "expected"), CASES, ids=_ids())
def test_attack(
    attack_tree: Tree, engine: str, monkeypatch: pytest.MonkeyPatch, op: str, path: str, expected
) -> None:
    # If anything expanded `~`, it would find a file here.
    monkeypatch.setenv("HOME", str(attack_tree.base / "home"))
    root = make_root(attack_tree.root, engine=engine, deny=["café*"])
    if isinstance(expected, OK):
        assert _run(root, op, path) == expected.value
    else:
        with pytest.raises(LoomError) as err:
            _run(root, op, path)
        assert err.value.message == expected
        # Whatever the refusal, it never carries a host path.
        assert str(attack_tree.base) not in err.value.message


def test_nothing_outside_was_created_or_changed(attack_tree: Tree, engine: str) -> None:
    root = make_root(attack_tree.root, engine=engine)
    for path in ("out_dir/new.txt", "out_dir_abs/new.txt", "../outside/new.txt"):
        with pytest.raises(LoomError):
            root.open_parent(path, op="write_file", perm="write")
    assert sorted(os.listdir(attack_tree.outside)) == [".env", "dir", "secret.txt"]
    assert (attack_tree.outside / "secret.txt").read_text() == "OUTSIDE"


# -- the NFD rule written in the config, the name arriving in NFC ----------------


@pytest.mark.parametrize("name", ["café.txt", "cafe\u0301.txt", "CAFÉ.TXT"])
def test_a_pattern_written_in_nfd_denies_every_form(tmp_path: Path, name: str) -> None:
    root = make_root(tmp_path, deny=["cafe\u0301*"])
    with pytest.raises(LoomError) as err:
        root.open_file(name, op="read")
    assert err.value.message == deny("cafe\u0301*")


# -- the order of the checks: permission, then confinement, then deny ------------


def test_permission_is_checked_before_confinement_and_deny(attack_tree: Tree, engine: str) -> None:
    docs = make_root(attack_tree.root, engine=engine, name="docs", role="reference")
    refused = "root 'docs' (role reference) grants [read], not write"
    for path in ("../outside/.env", ".env", "/etc/passwd", "out_dir/x", "a.txt"):
        with pytest.raises(LoomError) as err:
            docs.open_parent(path, op="write_file", perm="write")
        assert err.value.message == refused, path


def test_a_sourcecode_root_refuses_delete_naming_its_grants(attack_tree: Tree) -> None:
    src = make_root(attack_tree.root, name="src", role="sourcecode")
    with pytest.raises(LoomError) as err:
        src.open_parent("a.txt", op="delete", perm="delete")
    assert err.value.message == "root 'src' (role sourcecode) grants [read, write], not delete"


@pytest.mark.parametrize(
    "path",
    ["../.env", "../outside/.env", ".env/../../outside/secret.txt", "node_modules/../../x"],
)
def test_confinement_is_checked_before_deny(attack_tree: Tree, engine: str, path: str) -> None:
    root = make_root(attack_tree.root, engine=engine)
    with pytest.raises(LoomError) as err:
        root.open_file(path, op="read")
    assert err.value.message == ESC


def test_a_link_leaving_to_a_denied_name_is_an_escape_not_a_deny(
    attack_tree: Tree, engine: str
) -> None:
    root = make_root(attack_tree.root, engine=engine)
    with pytest.raises(LoomError) as err:
        root.open_file("env_out", op="read")
    assert err.value.message == ESC


def test_the_order_is_the_one_written_in_the_audit_log(attack_tree: Tree) -> None:
    lines: list[tuple[str, str, str, str, str | None]] = []  # what an AuditFn is given
    root = make_root(attack_tree.root, audit=lambda *a: lines.append(a))
    for path in ("../x", ".env", "a.txt"):
        with contextlib.suppress(LoomError):
            root.open_file(path, op="read_text_file").close()
    assert [(d, rel, rule and rule.split(":")[0]) for d, _, rel, _, rule in lines] == [
        ("DENY", "../x", "confinement"),
        ("DENY", ".env", "deny"),
        ("ALLOW", "a.txt", None),
    ]


# -- open_parent never follows the final component -------------------------------


def test_open_parent_does_not_follow_a_final_link_to_a_denied_name(attack_tree: Tree, engine: str):
    root = make_root(attack_tree.root, engine=engine)
    with root.open_parent("notes.txt", op="write_file", perm="write") as p:
        assert p.name == "notes.txt" and p.target == "notes.txt"
        st = p.lstat()
        assert st is not None and stat.S_ISLNK(st.st_mode)


def test_open_parent_does_not_follow_a_final_link_leaving_the_root(attack_tree: Tree, engine: str):
    root = make_root(attack_tree.root, engine=engine)
    with root.open_parent("out_file", op="write_file", perm="write") as p:
        # The safe way to create: exclusive, never through a link. It refuses here.
        with pytest.raises(FileExistsError):
            os.open(p.name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, dir_fd=p.fd)
        with pytest.raises(OSError):
            os.open(p.name, os.O_WRONLY | os.O_NOFOLLOW, dir_fd=p.fd)
    assert (attack_tree.outside / "secret.txt").read_text() == "OUTSIDE"


def test_open_parent_follows_in_root_links_before_the_final_name(attack_tree: Tree, engine: str):
    root = make_root(attack_tree.root, engine=engine)
    with root.open_parent("in_dir/created.txt", op="write_file", perm="write") as p:
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
        fd = os.open(p.name, flags, 0o600, dir_fd=p.fd)
        os.close(fd)
    created = attack_tree.root / "sub" / "created.txt"
    assert created.exists()
    created.unlink()


def test_creating_parents_stays_inside_and_off_denied_names(attack_tree: Tree, engine: str) -> None:
    root = make_root(attack_tree.root, engine=engine)
    with root.open_parent(
        "in_dir/p1/p2/f.txt", op="write_file", perm="write", create_parents=True
    ) as p:
        assert p.target == "sub/p1/p2/f.txt"
    assert (attack_tree.root / "sub" / "p1" / "p2").is_dir()
    refusals = {
        "out_dir/p1/f.txt": ESC,
        "out_dir_abs/p1/f.txt": ESC,
        "gitlink/p1/f.txt": deny(".git"),
        "p3/.Git/f.txt": deny(".git"),
        "p4/node_modules/f.txt": deny("node_modules"),
    }  # fmt: skip
    for path, message in refusals.items():
        with pytest.raises(LoomError) as err:
            root.open_parent(path, op="write_file", perm="write", create_parents=True)
        assert err.value.message == message, path
    assert sorted(os.listdir(attack_tree.outside)) == [".env", "dir", "secret.txt"]
    assert not (attack_tree.root / "p3").exists() and not (attack_tree.root / "p4").exists()
    assert sorted(os.listdir(attack_tree.root / ".git")) == ["config"]
    for d in ("sub/p1/p2", "sub/p1"):
        (attack_tree.root / d).rmdir()


def test_the_root_itself_cannot_be_changed(attack_tree: Tree) -> None:
    root = make_root(attack_tree.root)
    for path in ("", ".", "sub/.."):
        with pytest.raises(LoomError) as err:
            root.open_parent(path, op="delete", perm="delete")
        assert err.value.message == invalid("the root itself cannot be changed")


# -- FIFOs: refusing one must not block ------------------------------------------


def test_opening_a_fifo_returns_at_once(attack_tree: Tree, engine: str) -> None:
    root = make_root(attack_tree.root, engine=engine)
    fifo = str(attack_tree.root / "fifo")

    def unblock() -> None:
        # Were the open blocked waiting for a writer, this writer releases it (and the
        # test then fails on time instead of hanging). With no reader waiting: ENXIO.
        with contextlib.suppress(OSError):
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))

    watchdog = threading.Timer(2.0, unblock)
    watchdog.start()
    t0 = time.monotonic()
    try:
        with pytest.raises(LoomError, match=f"^{NOT_REG}$"):
            root.open_file("fifo", op="read")
    finally:
        watchdog.cancel()
    # A blocked open lasts until the watchdog's 2 s; a refusal at open takes far less, even
    # on a loaded machine.
    assert time.monotonic() - t0 < 1.8


# -- `allow`: re-opens base names for one root, never the floor -----------------


def test_allow_reopens_a_base_name_for_that_root_only(attack_tree: Tree, engine: str) -> None:
    opened = make_root(attack_tree.root, engine=engine, allow=[".env"])
    with opened.open_file(".env", op="read") as f:
        assert os.read(f.fd, 100) == b"SECRET"
    with opened.open_file("sub/.env", op="read") as f:
        assert os.read(f.fd, 100) == b"SECRET"
    # `.env` re-opened does not re-open `.env.*`, nor anything on the floor.
    for path, pattern in ((".env.local", ".env.*"), (".git/config", ".git")):
        with pytest.raises(LoomError) as err:
            opened.open_file(path, op="read")
        assert err.value.message == deny(pattern)
    # The link to `.env` now resolves to a readable name.
    with opened.open_file("notes.txt", op="read") as f:
        assert os.read(f.fd, 100) == b"SECRET"
    other = make_root(attack_tree.root, engine=engine, name="other")
    with pytest.raises(LoomError) as err:
        other.open_file(".env", op="read")
    assert err.value.message == deny(".env")


def test_allow_through_the_config_reopens_a_base_name(tmp_path: Path) -> None:
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "node_modules").mkdir()  # base list: re-openable
    (tmp_path / "proj" / "node_modules" / "x.js").write_text("X")
    cfg = tmp_path / "roots.toml"
    cfg.write_text(roots_toml(("proj", "proj", "reference", {"allow": ["node_modules"]}),
                              audit_log=tmp_path / "audit.log"))
    loaded = config_mod.load(cfg)
    assert loaded.roots[0].allow == ("node_modules",)
    root = make_root(tmp_path / "proj", allow=loaded.roots[0].allow)
    with root.open_file("node_modules/x.js", op="read") as f:
        assert os.read(f.fd, 10) == b"X"


@pytest.mark.parametrize(
    ("entry", "floor"),
    [
        (".git", ".git"),
        (".GIT", ".git"),
        ("*.pem", "*.pem"),
        ("server.key", "*.key"),
        ("id_rsa", "id_rsa*"),
        (".mcp-trash", ".mcp-trash"),
        (".mcp-tmp-x", ".mcp-tmp-*"),
        ("*", ".mcp-trash"),
    ],
)
def test_allow_of_a_floor_name_is_a_load_error(tmp_path: Path, entry: str, floor: str) -> None:
    (tmp_path / "proj").mkdir()
    cfg = tmp_path / "roots.toml"
    cfg.write_text(roots_toml(("proj", "proj", "reference", {"allow": [entry]}),
                              audit_log=tmp_path / "audit.log"))
    with pytest.raises(ConfigError) as err:
        config_mod.load(cfg)
    assert err.value.message == (
        f"invalid config: root 'proj': allow: '{entry}' would re-open the floor pattern "
        f"'{floor}', which nothing can re-open"
    )

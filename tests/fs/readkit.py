"""The tree the read and search tests run on, and the helpers to reach it.

One tree with every case a read or search tool must get right: text in each
supported encoding, binaries, media, a file over the root's `max_read_bytes`,
overlong lines, many files for pagination, denied names at every depth (each
holding the search needle, so a leak would show), symlinks inside, outside
and in a loop, and a FIFO. `outside/` sits next to the roots and is reached
by no root. Fixtures that start a server live in the test modules; the tree
and the config are built here.
"""

from __future__ import annotations

import os
import struct
import textwrap
import zlib
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from app.security.resolve import Root
from tests.kit import config_file, loaded_root, roots_toml
from tests.live import LiveServer, live_server

MAX_READ = 65536  # main's max_read_bytes: big.log is over it
NEEDLE = "NEEDLE"
MANY = 250  # files in many/, each with one NEEDLE line

# Denied names at several depths; each holds the needle, so a leak would show in a search.
DENIED_FILES = [
    ".env",
    ".env.local",
    ".git/config",
    ".git/objects/ab/cdef",
    "node_modules/pkg/index.js",
    "src/.env",
    "src/pkg/.venv/lib/site.py",
    "src/pkg/__pycache__/mod.cpython-311.pyc",
    "docs/deep/er/id_rsa",
    "docs/server.pem",
    "docs/credentials.json",
    ".ssh/known_hosts",
    "src/service-account-prod.json",
    "src/pkg/deep/.aws/config",
    "DATA/.Env",
]
DENIED_NAMES = {".env", ".env.local", ".git", "node_modules", ".venv", "__pycache__", "id_rsa",
                "server.pem", "credentials.json", ".ssh", "service-account-prod.json", ".aws",
                ".Env"}


def png_bytes() -> bytes:
    """A valid 1x1 PNG."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))
    ihdr = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr)
            + chunk(b"IDAT", zlib.compress(b"\x00\xff\x00\x00")) + chunk(b"IEND", b""))


def wav_bytes() -> bytes:
    """A valid, very short 8-bit mono WAV."""
    samples = bytes(range(0, 256, 8))
    fmt = struct.pack("<HHIIHH", 1, 1, 8000, 8000, 1, 8)
    body = b"WAVE" + b"fmt " + struct.pack("<I", len(fmt)) + fmt
    body += b"data" + struct.pack("<I", len(samples)) + samples
    return b"RIFF" + struct.pack("<I", len(body)) + body


_TEXT = "héllo wörld\nsecond ✓\n"
ENCODED = {
    # name: (encoding label we expect, bytes)
    "utf8.txt": ("utf-8", _TEXT.encode()),
    "utf8bom.txt": ("utf-8-sig", b"\xef\xbb\xbf" + "bom héllo\nsecond ✓\n".encode()),
    "utf16le.txt": ("utf-16-le", b"\xff\xfe" + _TEXT.encode("utf-16-le")),
    "utf16be.txt": ("utf-16-be", b"\xfe\xff" + _TEXT.encode("utf-16-be")),
    "utf32le.txt": ("utf-32-le", b"\xff\xfe\x00\x00" + _TEXT.encode("utf-32-le")),
    "utf32be.txt": ("utf-32-be", b"\x00\x00\xfe\xff" + _TEXT.encode("utf-32-be")),
    "gb18030.txt": ("gb18030", "你好，世界\n第二行 ✓\n".encode("gb18030")),
}
DECODED = {
    "utf8.txt": ["héllo wörld", "second ✓"],
    "utf8bom.txt": ["bom héllo", "second ✓"],
    "gb18030.txt": ["你好，世界", "第二行 ✓"],
}
for _name in ("utf16le.txt", "utf16be.txt", "utf32le.txt", "utf32be.txt"):
    DECODED[_name] = ["héllo wörld", "second ✓"]


def build(base: Path) -> dict[str, Path]:
    """Create base/{main,ws,outside,cfg} and return their paths."""
    main, ws, outside = base / "main", base / "ws", base / "outside"
    for d in (main, ws, outside):
        d.mkdir(parents=True, exist_ok=True)
    w = _writer(main)
    w("README.md", "# Project\nA NEEDLE in the readme\n")
    w("src/app.py", "import os\n\ndef main():\n    return 'NEEDLE'\n")
    w("src/pkg/mod.py", "X = 1\n")
    w("src/pkg/util.py", "def util():\n    pass\n")
    w("src/pkg/deep/er/still/leaf.py", "LEAF = 'needle, lower case'\n")
    w("docs/guide.md", "Guide\n" + "".join(f"line {i}\n" for i in range(2, 1001)))
    w("docs/crlf.txt", "one\r\ntwo\r\nthree\r\n")
    w("docs/.env.example", "TEMPLATE=NEEDLE\n")  # a template: allowed
    w("docs/empty.txt", "")
    w("docs/nolf.txt", "a\nb")
    for name, (_, data) in ENCODED.items():
        w(f"enc/{name}", data)
    w("enc/utf16-needle.txt", b"\xff\xfe" + "x\nwide NEEDLE here\n".encode("utf-16-le"))
    w("bin/blob.bin", b"\x7fELF" + b"\x00" * 64 + b"NEEDLE")
    w("bin/late-nul.txt", b"A" * 5000 + b"\x00NEEDLE\n")  # read as text, searched as binary
    w("media/pic.png", png_bytes())
    w("media/noext", png_bytes())
    w("media/sound.wav", wav_bytes())
    w("media/fake.png", "not an image\n")
    w("media/huge.png", png_bytes() + b"\0" * MAX_READ)  # over main's max_read_bytes
    w("big/big.log", "".join(f"entry {i:06d}\n" for i in range(1, 20001)))  # ~260 KB
    w("big/oneline.txt", "x" * 200_000 + "\nafter\n")
    w("big/long-then-short.txt", "short\n" + "y" * 100_000 + "\nlast\n")
    for i in range(MANY):
        w(f"many/f{i:03d}.txt", f"file {i}\nNEEDLE {i}\n")
    for rel in DENIED_FILES:
        w(rel, f"SECRET {NEEDLE} in {rel}\n")
    os.symlink("src", main / "link_in")
    os.symlink("README.md", main / "link_file")
    os.symlink(str(outside), main / "link_out")
    os.symlink(".env", main / "link_secret")
    os.symlink("loop_b", main / "loop_a")
    os.symlink("loop_a", main / "loop_b")
    os.mkfifo(main / "fifo")
    (outside / "secret.txt").write_text(f"outside {NEEDLE}\n")
    _writer(ws)("notes.txt", "workspace notes\n")
    return {"main": main, "ws": ws, "outside": outside, "cfg": base / "cfg"}


def _writer(top: Path):
    def write(rel: str, data: str | bytes) -> None:
        p = top / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(data, str):
            p.write_bytes(data.encode())
        else:
            p.write_bytes(data)

    return write


def config(base: Path, paths: dict[str, Path], extra: str = "", name: str = "roots.toml") -> Path:
    return config_file(base, roots_toml(
        ("main", paths["main"], "reference", {"max_read_bytes": MAX_READ}),
        ("ws", paths["ws"], "workspace"),
        audit_log=base / "state" / f"{name}.audit.log",
        extra=f'default_root = "main"\n{textwrap.dedent(extra)}',
    ), name)


# What the test modules' own module-scoped fixtures call: one tree and one server each.


def make_tree(factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Path]]:
    base = factory.mktemp("readtools")
    return base, build(base)


def serve(tree: tuple[Path, dict[str, Path]], extra: str = "",
          name: str = "roots.toml") -> Iterator[LiveServer]:
    base, paths = tree
    with live_server(config(base, paths, extra=extra, name=name)) as srv:
        yield srv


def small_root(
    tmp: Path, files: Mapping[str, str | bytes], *, max_read: int = MAX_READ, extra: str = ""
) -> Root:
    """A one-root config over `tmp/r` holding `files`, loaded as the server loads it."""
    top = tmp / "r"
    top.mkdir(parents=True, exist_ok=True)
    write = _writer(top)
    for rel, data in files.items():
        write(rel, data)
    path = config_file(tmp, roots_toml(("r", top, "reference", {"max_read_bytes": max_read}),
                                       audit_log=tmp / "state" / "audit.log", extra=extra))
    return loaded_root(path, "r")

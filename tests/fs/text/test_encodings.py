"""Encodings: what a BOM decides, what a NUL means, and the GB18030 fallback."""

from __future__ import annotations

import codecs
from pathlib import Path

import pytest

from app.errors import BinaryFile
from app.fs.reading.listing import stat_path
from app.fs.reading.read import read_text_file
from app.fs.text import textio
from tests.fs.readkit import DECODED, ENCODED, small_root

CAP = 65536


@pytest.mark.parametrize("name", sorted(ENCODED))
def test_each_supported_encoding_is_detected_and_decoded(tmp_path: Path, name: str) -> None:
    label, data = ENCODED[name]
    root = small_root(tmp_path, {name: data})
    r = read_text_file(root, name, start=1, end=10, tail=None, cap=CAP)
    assert r.encoding == label
    assert r.content == "\n".join(f"{i} | {t}" for i, t in enumerate(DECODED[name], 1))
    assert r.total_lines == 2
    assert stat_path(root, name).is_text is True


@pytest.mark.parametrize("name", ["utf16le.txt", "utf16be.txt", "utf32le.txt", "utf32be.txt"])
def test_wide_text_is_full_of_nul_bytes_and_still_text(name: str) -> None:
    data = ENCODED[name][1]
    assert b"\0" in data[:64]
    assert textio.sniff(data).binary is False


BINARY = [
    # a NUL in the first 4 KiB, once any BOM is set aside
    ("plain", b"abc\x00def"),
    ("utf-8 BOM then NUL", codecs.BOM_UTF8 + b"abc\x00"),
    ("UTF-16 without a BOM", "hello".encode("utf-16-le")),
    ("NUL at byte 4095", b"a" * 4095 + b"\x00"),
    ("ELF", b"\x7fELF\x02\x01\x01\x00" + b"\x00" * 32),
]


@pytest.mark.parametrize(("why", "data"), BINARY)
def test_binary_is_refused(tmp_path: Path, why: str, data: bytes) -> None:
    root = small_root(tmp_path, {"f": data})
    with pytest.raises(BinaryFile) as exc:
        read_text_file(root, "f", start=1, end=10, tail=None, cap=CAP)
    assert exc.value.message == (
        "'f' is binary (a NUL byte in its first 4 KiB); read_media_file serves images and audio")
    assert stat_path(root, "f").is_text is False


def test_a_nul_after_the_first_4_kib_does_not_make_a_file_binary(tmp_path: Path) -> None:
    root = small_root(tmp_path, {"f": b"a" * 4096 + b"\x00b\n"})
    r = read_text_file(root, "f", start=1, end=1, tail=None, cap=CAP)
    assert r.content.endswith("a\x00b")


def test_gb18030_is_the_fallback_when_utf8_fails(tmp_path: Path) -> None:
    text = "配置文件\n中文注释 # ok\n"
    root = small_root(tmp_path, {"f": text.encode("gb18030")})
    r = read_text_file(root, "f", start=1, end=2, tail=None, cap=CAP)
    assert r.encoding == "gb18030" and r.content == "1 | 配置文件\n2 | 中文注释 # ok"


def test_bytes_that_no_encoding_takes_show_as_replacement_characters(tmp_path: Path) -> None:
    root = small_root(tmp_path, {"f": b"ok\n\x80\xff\xfe\x81\n"})
    r = read_text_file(root, "f", start=1, end=2, tail=None, cap=CAP)
    assert r.encoding == "utf-8" and r.content.startswith("1 | ok\n2 | ") and "\ufffd" in r.content


def test_utf8_decided_on_a_head_cut_inside_a_character(tmp_path: Path) -> None:
    # A streamed read decides on the first 4 KiB: '✓' (3 bytes) straddles its end.
    body = ("a" * 4095 + "✓\n") * 40
    root = small_root(tmp_path, {"f": body}, max_read=8192)
    r = read_text_file(root, "f", start=1, end=1, tail=None, cap=CAP)
    assert r.encoding == "utf-8" and r.content.endswith("✓") and r.sha256 is None


def test_a_bom_only_file_has_no_lines(tmp_path: Path) -> None:
    root = small_root(tmp_path, {"f": codecs.BOM_UTF16_LE})
    r = read_text_file(root, "f", start=1, end=5, tail=None, cap=CAP)
    assert r.encoding == "utf-16-le" and r.start_beyond_eof and r.total_lines == 0

"""benchmarks/corpus.py unpacks only what it should, on tarballs built here (no network)."""

from __future__ import annotations

import hashlib
import io
import tarfile
from pathlib import Path

import pytest

from benchmarks import corpus
from benchmarks.corpus import Refused, build, fetch, unpack


def _tarball(path: Path, members: list[tuple[str, bytes | None, str | None]]) -> Path:
    """(name, content, link target): a file when content is bytes, a symlink when the
    target starts with '>', a hard link when it starts with '=', else a folder."""
    with tarfile.open(path, "w:gz") as tar:
        for name, data, link in members:
            info = tarfile.TarInfo(name)
            if data is not None:
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
                continue
            if link is not None:
                info.type = tarfile.SYMTYPE if link[0] == ">" else tarfile.LNKTYPE
                info.linkname = link[1:]
            else:
                info.type = tarfile.DIRTYPE
            tar.addfile(info)
    return path


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes()
            for p in root.rglob("*") if p.is_file() and not p.is_symlink()}


@pytest.mark.parametrize("name", [
    "../x",
    "package/../../x",
    "package/a/../../../x",
    "/etc/x",
    "/package/x",
    "package\\..\\x",
    "other/x",  # a second top folder
])
def test_a_climbing_absolute_or_stray_member_refuses_the_package(tmp_path: Path, name: str
                                                                 ) -> None:
    tgz = _tarball(tmp_path / "p.tgz", [("package/ok.js", b"ok", None), (name, b"bad", None)])
    with pytest.raises(Refused):
        unpack(tgz, tmp_path / "out" / "p")
    assert not (tmp_path / "out" / "p").exists()  # only the .part folder, never renamed
    assert not (tmp_path / "x").exists() and not (tmp_path / "out" / "x").exists()


@pytest.mark.parametrize("link", [">/etc/passwd", ">../../outside", ">ok.js", "=package/ok.js",
                                  "=/etc/passwd"])
def test_links_are_skipped(tmp_path: Path, link: str) -> None:
    tgz = _tarball(tmp_path / "p.tgz", [("package/ok.js", b"ok", None),
                                        ("package/link", None, link)])
    files, size = unpack(tgz, tmp_path / "p")
    assert (files, size) == (1, 2)
    assert not (tmp_path / "p" / "link").exists() and not (tmp_path / "p" / "link").is_symlink()


def test_a_package_unpacks_into_its_folder_with_node_modules_renamed(tmp_path: Path) -> None:
    tgz = _tarball(tmp_path / "p.tgz", [
        ("package", None, None),
        ("package/index.js", b"export {}\n", None),
        ("package/node_modules/dep/index.js", b"dep\n", None),
        ("./package/lib/a.py", b"a = 1\n", None),
    ])
    assert unpack(tgz, tmp_path / "p") == (3, 20)
    assert _files(tmp_path / "p") == {"index.js": b"export {}\n",
                                      "node_modules_/dep/index.js": b"dep\n",
                                      "lib/a.py": b"a = 1\n"}


def test_past_the_unpacked_cap_refuses(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(corpus, "MAX_UNPACKED", 10)
    tgz = _tarball(tmp_path / "p.tgz", [("package/a", b"x" * 6, None),
                                        ("package/b", b"y" * 6, None)])
    with pytest.raises(Refused):
        unpack(tgz, tmp_path / "p")
    assert not (tmp_path / "p").exists()


def test_a_cached_file_with_another_digest_refuses(tmp_path: Path) -> None:
    (tmp_path / "p-1.0.tgz").write_bytes(b"not the pinned bytes")
    with pytest.raises(Refused, match="sha256"):
        fetch("p-1.0", "https://registry.invalid/p/-/p-1.0.tgz", "0" * 64, tmp_path)


def test_a_rerun_reuses_the_cache_and_the_tree(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    cache = tmp_path / "cache"
    cache.mkdir()
    tgz = _tarball(cache / "p-1.0.tgz", [("package/a.js", b"a\n", None)])
    pins = [("p-1.0", "https://registry.invalid/p/-/p-1.0.tgz",
             hashlib.sha256(tgz.read_bytes()).hexdigest())]
    out = tmp_path / "out"
    (out / "p-1.0.part").mkdir(parents=True)  # a run cut short
    build(out, cache, pins)
    assert _files(out) == {"p-1.0/a.js": b"a\n"}
    assert "1 files, 2 bytes" in capsys.readouterr().out
    tgz.unlink()  # the tree is there: the tarball is not needed again
    build(out, cache, pins)
    assert _files(out) == {"p-1.0/a.js": b"a\n"}

"""A real source tree of about 1 GB, unpacked from pinned registry packages.

    .venv/bin/python benchmarks/corpus.py --out DIR [--cache DIR]

The tree `benchmarks/search_index.py` is measured on: npm tarballs (TypeScript,
Babel, webpack, ESLint, React, Next.js, Angular, three.js, Monaco, pdf.js, ECharts,
the AWS SDK …) and PyPI source distributions (Django, SymPy, ansible-core, botocore,
NumPy, SciPy, pandas, Matplotlib), each at an exact version, fetched from the
registry's own file URL (the one `npm pack` and `pip download` fetch) into a cache
(`benchmarks/.cache/corpus/`, git-ignored). Each file's SHA-256 is checked against
the one written below before it is used: a mismatch refuses, and nothing of it is
unpacked.

Each package is unpacked into a folder of its own under `--out` (its tarball's one
top-level folder, `package/` or `NAME-VERSION/`, dropped), through `tarfile`'s
`data` filter and a check of our own first: a member whose name is absolute or
holds `..` refuses the whole package; links (symbolic or hard) and anything but
regular files and folders are skipped; a package past `MAX_UNPACKED` bytes or
`MAX_MEMBERS` members refuses. A folder named `node_modules` is unpacked as
`node_modules_` (the server's deny list hides that name, and ripgrep is told the
same list). A package is unpacked into `NAME.part` and renamed when whole, so a
re-run reuses the cache and every package already unpacked, and finishes one
that was cut short. Prints the tree's file count and bytes.

No test downloads anything: `tests/test_benchmark_corpus.py` checks the unpacking
on tarballs it builds.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import sys
import tarfile
import urllib.request
from pathlib import Path, PurePosixPath

CACHE = Path(__file__).resolve().parent / ".cache" / "corpus"
MAX_DOWNLOAD = 128 << 20  # the largest pinned file is 57 MB
MAX_UNPACKED = 512 << 20  # per package; the largest unpacks to about 210 MB
MAX_MEMBERS = 100_000
RENAMED = {"node_modules": "node_modules_"}

NPM = "https://registry.npmjs.org"
PYPI = "https://files.pythonhosted.org/packages"

PINS: list[tuple[str, str, str]] = [  # (folder, url, sha256)
    ("typescript-5.4.5", f"{NPM}/typescript/-/typescript-5.4.5.tgz",
     "154fae77169f04155ac52d521ac59abb07c9be29ea3744732adbf9f14abb2440"),
    ("babel-core-7.24.5", f"{NPM}/@babel/core/-/core-7.24.5.tgz",
     "61d6fa7b2633d5c6c39aaddd7ea62e7e80e0d34b78633385294f3c6b7234012d"),
    ("babel-generator-7.24.5", f"{NPM}/@babel/generator/-/generator-7.24.5.tgz",
     "e97cc7836be6fc780edbf269e21a57b22537903bc4bb60eb212e0731eb9f5b58"),
    ("babel-parser-7.24.5", f"{NPM}/@babel/parser/-/parser-7.24.5.tgz",
     "a5009c38c915b3da3079dcf385193613550580c5fd9c3611cf9087ffc5103cc6"),
    ("babel-preset-env-7.24.5", f"{NPM}/@babel/preset-env/-/preset-env-7.24.5.tgz",
     "e3dc60965a90cbad27f037b664ac6fbf1981f53ff2ff11f607ab1f8ad4208e0e"),
    ("babel-runtime-7.24.5", f"{NPM}/@babel/runtime/-/runtime-7.24.5.tgz",
     "5123d331045abc79497f1a4eae9d4a632f74a8d9a14fdad480b81d1288498991"),
    ("babel-standalone-7.24.5", f"{NPM}/@babel/standalone/-/standalone-7.24.5.tgz",
     "e3fd8518744f6df0b5d098b4ea6a7cd4c96e905e67d5520c3db6392e17db6c6f"),
    ("babel-traverse-7.24.5", f"{NPM}/@babel/traverse/-/traverse-7.24.5.tgz",
     "a39753b844bc354cec208178c07b34a5067e30f5d65e00f207ebdf3993b105c7"),
    ("babel-types-7.24.5", f"{NPM}/@babel/types/-/types-7.24.5.tgz",
     "9a1fd43d7d4a51855d08bd6d328ca857ca3846a393a281544656afad9bdbe3df"),
    ("webpack-5.91.0", f"{NPM}/webpack/-/webpack-5.91.0.tgz",
     "473b007db06efe48024180a50c600384596abfc5f4e2b749a77f33d753bd2327"),
    ("eslint-9.2.0", f"{NPM}/eslint/-/eslint-9.2.0.tgz",
     "2a8c4e9ab940dbe6bcbaf3edceb439a2dddf149b3597a6a67e8b52bac3d41407"),
    ("react-18.3.1", f"{NPM}/react/-/react-18.3.1.tgz",
     "8d9bed01a672e7eaf387942d781ad47c6a43089a30a0306060f9fd5ac7870347"),
    ("react-dom-18.3.1", f"{NPM}/react-dom/-/react-dom-18.3.1.tgz",
     "031d4427a99f2f3f6cac18bbbf308594a67e4f47d10f4896fdec446505b040e0"),
    ("next-14.2.3", f"{NPM}/next/-/next-14.2.3.tgz",
     "446572d97c056df37787537ed1ec5ca98f30ee408d68eaa229f1be6ecb210450"),
    ("angular-core-17.3.8", f"{NPM}/@angular/core/-/core-17.3.8.tgz",
     "7a7cbd2a1e5bb5ddfb2ed47c67d997811a09c91cf24d2b6cd3c942c8f5a59f87"),
    ("angular-compiler-17.3.8", f"{NPM}/@angular/compiler/-/compiler-17.3.8.tgz",
     "55abd1c5daf5249c0682be5f07f60c50631ae0c06082a92e89fc1a7e816920ca"),
    ("angular-common-17.3.8", f"{NPM}/@angular/common/-/common-17.3.8.tgz",
     "3a2f1511374430f4d5b5aba5caaa463358ba5ee91d376eebb723b14ff38ede61"),
    ("three-0.164.1", f"{NPM}/three/-/three-0.164.1.tgz",
     "3798b9631ab02167095f0be742981da98a8d6f2cde1f1bb9b27ad44fe2e58771"),
    ("monaco-editor-0.48.0", f"{NPM}/monaco-editor/-/monaco-editor-0.48.0.tgz",
     "a02494fa0dff5cbdc89608115b7991d5ea0a0f1c217a13b561b68c7757f36696"),
    ("pdfjs-dist-4.2.67", f"{NPM}/pdfjs-dist/-/pdfjs-dist-4.2.67.tgz",
     "c26bcf57ef942ba267cd7b3897a610d375428ed2e8cc223d659e6e5478b8c80c"),
    ("rxjs-7.8.1", f"{NPM}/rxjs/-/rxjs-7.8.1.tgz",
     "c532167725ab7d085123209156c93cef22f2479cb9c8527060f1cd903aa9d149"),
    ("lodash-4.17.21", f"{NPM}/lodash/-/lodash-4.17.21.tgz",
     "6a087ac9e5702a0c9d60fbcd48696012646ec8df1491dea472b150e79fcaf804"),
    ("vue-3.4.27", f"{NPM}/vue/-/vue-3.4.27.tgz",
     "aab3d2f8990a3ca7f4246677fc14ba9c4f38113d9f8db6095c50c4728879b640"),
    ("types-node-20.12.12", f"{NPM}/@types/node/-/node-20.12.12.tgz",
     "759ebdb4f6e0da9dee19236f87d5b0d9dccd447a2347fd0e1ca15557946691cb"),
    ("echarts-5.5.0", f"{NPM}/echarts/-/echarts-5.5.0.tgz",
     "9e5771738a966d74ca027b0987499cddafe24f5271767b23cee6badb010bf058"),
    ("aws-sdk-2.1620.0", f"{NPM}/aws-sdk/-/aws-sdk-2.1620.0.tgz",
     "5d29e749e65fa02f8e47b50b98ae2277f39fe9dc27c63bb48bcaa8c38848f5dd"),
    ("django-5.0.6", f"{PYPI}/4c/d3/"
     "b0dae3b5e6412227ec4387cf39110be3432c53886d2927c78b5f6976f1cb"
     "/Django-5.0.6.tar.gz",
     "ff1b61005004e476e0aeea47c7f79b85864c70124030e95146315396f1e7951f"),
    ("sympy-1.12", f"{PYPI}/e5/57/"
     "3485a1a3dff51bfd691962768b14310dae452431754bfc091250be50dd29"
     "/sympy-1.12.tar.gz",
     "ebf595c8dac3e0fdc4152c51878b498396ec7f30e7a914d6071e674d49420fb8"),
    ("ansible-core-2.16.7", f"{PYPI}/6b/1b/"
     "6a9e9012b250b9f13680eaabaf9ec5eae51622a1c519a851046d0eac4e3b"
     "/ansible_core-2.16.7.tar.gz",
     "a8c8f4facba30514571d47abec5c62a5768b86fef3d80d724911c8f20b7b34b7"),
    ("botocore-1.34.110", f"{PYPI}/68/21/"
     "3186c501d87a83dcc1b3df12c9112ee494033c1ed7c051e72414ba6a3212"
     "/botocore-1.34.110.tar.gz",
     "b2c98c40ecf0b1facb9e61ceb7dfa28e61ae2456490554a16c8dbf99f20d6a18"),
    ("numpy-1.26.4", f"{PYPI}/65/6e/"
     "09db70a523a96d25e115e71cc56a6f9031e7b8cd166c1ac8438307c14058"
     "/numpy-1.26.4.tar.gz",
     "2a02aba9ed12e4ac4eb3ea9421c420301a0c6460d9830d74a9df87efa4912010"),
    ("scipy-1.13.1", f"{PYPI}/ae/00/"
     "48c2f661e2816ccf2ecd77982f6605b2950afe60f60a52b4cbbc2504aa8f"
     "/scipy-1.13.1.tar.gz",
     "095a87a0312b08dfd6a6155cbbd310a8c51800fc931b8c0b84003014b874ed3c"),
    ("pandas-2.2.2", f"{PYPI}/88/d9/"
     "ecf715f34c73ccb1d8ceb82fc01cd1028a65a5f6dbc57bfa6ea155119058"
     "/pandas-2.2.2.tar.gz",
     "9e79019aba43cb4fda9e4d983f8e88ca0373adbb697ae9c6c43093218de28b54"),
    ("matplotlib-3.8.4", f"{PYPI}/38/4f/"
     "8487737a74d8be4ab5fbe6019b0fae305c1604cf7209500969b879b5f462"
     "/matplotlib-3.8.4.tar.gz",
     "8aac397d5e9ec158960e31c381c5ffc52ddd52bd9a47717e2a694038167dffea"),
]


class Refused(Exception):
    """A download or a tarball this script will not use."""


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def fetch(folder: str, url: str, sha256: str, cache: Path = CACHE) -> Path:
    """The pinned file, from the cache or downloaded into it; its digest checked either way."""
    cache.mkdir(parents=True, exist_ok=True)
    dest = cache / (folder + (".tar.gz" if url.endswith(".tar.gz") else ".tgz"))
    if not dest.exists():
        part = dest.with_name(dest.name + ".part")
        got = 0
        with urllib.request.urlopen(url, timeout=120) as r, part.open("wb") as f:
            while chunk := r.read(1 << 20):
                got += len(chunk)
                if got > MAX_DOWNLOAD:
                    part.unlink()
                    raise Refused(f"{url}: more than {MAX_DOWNLOAD} bytes")
                f.write(chunk)
        part.rename(dest)
    digest = _sha256(dest)
    if digest != sha256:
        raise Refused(f"{dest.name}: sha256 {digest}, pinned {sha256}; delete it to fetch again")
    return dest


def _member_path(name: str, top: str | None) -> tuple[str, PurePosixPath | None]:
    """(top folder, the member's path inside the package's folder, renames applied).

    The path is None for the top folder itself. Refused for a name that is absolute,
    climbs, or lies under another top folder than the first member's."""
    p = PurePosixPath(name)
    if p.is_absolute() or name.startswith(("/", "\\")) or ".." in p.parts or "\\" in name:
        raise Refused(f"member {name!r}: absolute or climbing name")
    parts = [part for part in p.parts if part != "."]
    if not parts or (top is not None and parts[0] != top):
        raise Refused(f"member {name!r}: not under the tarball's one top folder {top!r}")
    rest = [RENAMED.get(part, part) for part in parts[1:]]
    return parts[0], PurePosixPath(*rest) if rest else None


def unpack(tarball: Path, dest: Path) -> tuple[int, int]:
    """Unpack into `dest` (which must not exist) through `dest.part`; (files, bytes) written."""
    part = dest.with_name(dest.name + ".part")
    if part.exists():
        shutil.rmtree(part)
    part.mkdir(parents=True)
    if not hasattr(tarfile, "data_filter"):
        raise Refused("this Python's tarfile has no extraction filters (3.11.4 or later needed)")
    files = total = members = 0
    top: str | None = None
    with tarfile.open(tarball, "r:*") as tar:
        for m in tar:
            members += 1
            if members > MAX_MEMBERS:
                raise Refused(f"{tarball.name}: more than {MAX_MEMBERS} members")
            top, rel = _member_path(m.name, top)
            if rel is None or not (m.isfile() or m.isdir()):
                continue  # the top folder; links, devices, fifos
            total += m.size
            if total > MAX_UNPACKED:
                raise Refused(f"{tarball.name}: more than {MAX_UNPACKED} bytes unpacked")
            m = m.replace(name=str(rel), deep=False)
            tar.extract(m, part, set_attrs=False, filter="data")
            files += m.isfile()
    part.rename(dest)
    return files, total


def tree_size(out: Path) -> tuple[int, int]:
    files = size = 0
    for dirpath, _dirs, names in os.walk(out):
        for n in names:
            st = os.lstat(os.path.join(dirpath, n))
            files += 1
            size += st.st_size
    return files, size


def build(out: Path, cache: Path = CACHE, pins: list[tuple[str, str, str]] = PINS) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for folder, url, sha256 in pins:
        dest = out / folder
        if dest.is_dir():
            continue
        files, size = unpack(fetch(folder, url, sha256, cache), dest)
        print(f"{folder}: {files} files, {size / 1e6:.1f} MB", flush=True)
    files, size = tree_size(out)
    print(f"{out}: {len(pins)} packages, {files} files, {size} bytes ({size / 2**30:.2f} GiB)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--cache", type=Path, default=CACHE)
    a = ap.parse_args()
    try:
        build(a.out.resolve(), a.cache)
    except Refused as e:
        sys.exit(f"refused: {e}")


if __name__ == "__main__":
    main()

"""The seed's tree shape: 300 useful Python files beside 24,000 files of noise.

The seed measured its pruned walk on "a tree of 24,300 files, 300 of them
useful, the rest `.venv` and `node_modules`". `build_seed_tree` lays out that
shape: a small `src/` package tree (the 300 `.py` files an agent looks for),
a `.venv/lib/python3.11/site-packages/` holding packages nested a few levels
deep (mostly `.py`, so an unpruned `*.py` search drowns in them), and a
`node_modules/` with scoped and nested packages (`.js`, `.json`, `.d.ts`).
Deterministic: the same call always builds the same tree.
"""

from __future__ import annotations

import os
from collections import deque
from dataclasses import dataclass
from pathlib import Path

USEFUL_FILES = 300
NOISE_FILES = 24_000


@dataclass(frozen=True)
class TreeCounts:
    useful: int  # `.py` files outside `.venv`/`node_modules`
    noise: int  # files under `.venv`/`node_modules`
    dirs: int  # directories created, the root excluded

    @property
    def files(self) -> int:
        return self.useful + self.noise


_CREATE = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_CLOEXEC", 0)


def _touch(path: Path, text: str) -> None:
    # Raw calls: 24,300 files through `Path.write_text` cost seconds more on a slow VM.
    fd = os.open(path, _CREATE, 0o644)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def _src(root: Path) -> tuple[int, int]:
    """300 `.py` files: src/loom/<6 subpackages>/<5 modules' worth of files>."""
    files = dirs = 0
    pkg = root / "src" / "loom"
    pkg.mkdir(parents=True)
    dirs += 2
    subpackages = ["core", "security", "tools", "fs", "transport", "cli"]
    per_sub = USEFUL_FILES // len(subpackages)  # 50
    for sub in subpackages:
        d = pkg / sub
        d.mkdir()
        dirs += 1
        nested = d / "impl"
        nested.mkdir()
        dirs += 1
        for i in range(per_sub):
            # Three in five at the top of the subpackage, the rest one level down.
            where = d if i % 5 < 3 else nested
            _touch(where / f"mod_{i:02d}.py", f"# {sub} {i}\nVALUE = {i}\n")
            files += 1
    return files, dirs


def _venv(root: Path, budget: int) -> tuple[int, int]:
    """site-packages with packages three levels deep, ~40 files a directory."""
    files = dirs = 0
    site = root / ".venv" / "lib" / "python3.11" / "site-packages"
    site.mkdir(parents=True)
    (root / ".venv" / "bin").mkdir()
    dirs += 5
    for name in ("python", "pip", "activate"):
        _touch(root / ".venv" / "bin" / name, "#!/bin/sh\n")
        files += 1
    _touch(root / ".venv" / "pyvenv.cfg", "home = /usr/bin\n")
    files += 1
    pkg_no = 0
    while files < budget:
        pkg = site / f"package_{pkg_no:03d}"
        pkg.mkdir()
        dirs += 1
        for sub in ("", "_internal", "_internal/helpers", "tests"):
            d = pkg / sub if sub else pkg
            if sub:
                d.mkdir(exist_ok=True)
                dirs += 1
            for i in range(40):
                if files >= budget:
                    break
                _touch(d / f"module_{i:02d}.py", "x = 1\n")
                files += 1
        info = site / f"package_{pkg_no:03d}-1.0.dist-info"
        info.mkdir()
        dirs += 1
        for meta in ("METADATA", "RECORD", "WHEEL"):
            if files >= budget:
                break
            _touch(info / meta, "Name: x\n")
            files += 1
        pkg_no += 1
    return files, dirs


def _node_modules(root: Path, budget: int) -> tuple[int, int]:
    """npm layout: plain and `@scope/` packages, each with lib/ and a nested node_modules."""
    files = dirs = 0
    nm = root / "node_modules"
    nm.mkdir()
    dirs += 1
    pkg_no = 0
    while files < budget:
        base = nm / f"@scope{pkg_no % 7}" if pkg_no % 3 == 0 else nm
        if not base.exists():
            base.mkdir()
            dirs += 1
        pkg = base / f"pkg-{pkg_no:03d}"
        targets = [pkg, pkg / "lib", pkg / "dist", pkg / "node_modules" / f"dep-{pkg_no:03d}"]
        for d in targets:
            if not d.exists():
                d.mkdir(parents=True)
                dirs += 2 if d.parent.name == "node_modules" and d.parent != nm else 1
        for i in range(60):
            if files >= budget:
                break
            d = targets[i % len(targets)]
            ext = (".js", ".d.ts", ".json", ".js.map")[i % 4]
            _touch(d / f"file_{i:02d}{ext}", "module.exports = 1;\n")
            files += 1
        pkg_no += 1
    return files, dirs


def build_seed_tree(folder: str | os.PathLike[str], noise: int = NOISE_FILES) -> TreeCounts:
    """Build the seed's tree shape inside `folder` (which must exist and be empty).

    `noise` scales the `.venv`/`node_modules` part (same nesting, fewer files):
    tests that only need the shape use a tenth of it to stay fast.
    """
    root = Path(folder)
    useful, d1 = _src(root)
    venv, d2 = _venv(root, noise // 2)
    node, d3 = _node_modules(root, noise - venv)
    return TreeCounts(useful=useful, noise=venv + node, dirs=d1 + d2 + d3)


def scandir_floor(folder: str) -> int:
    """The floor the walk is measured against: a bare pruned `os.scandir` BFS."""
    seen = 0
    queue = deque([folder])
    while queue:
        with os.scandir(queue.popleft()) as it:
            for entry in it:
                if entry.name in (".venv", "node_modules"):
                    continue
                seen += 1
                if entry.is_dir(follow_symlinks=False):
                    queue.append(entry.path)
    return seen

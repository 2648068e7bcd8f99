"""What the side-by-side benchmarks share: the code of a baseline commit, to run beside this.

`baseline(ref, into)` unpacks `app/` of commit `ref` (a `git archive`) into `into`; a child
process with `into` first on `sys.path` then runs that commit's code with this checkout's
interpreter and dependencies.
"""

from __future__ import annotations

import os
import subprocess
import tarfile
from pathlib import Path

REPO = str(Path(__file__).resolve().parent.parent)


def baseline(ref: str, into: str) -> str:
    """The code of commit `ref`, unpacked into `into`."""
    archive = subprocess.run(["git", "-C", REPO, "archive", ref, "app"], capture_output=True,
                             check=True).stdout
    os.makedirs(into, exist_ok=True)
    path = os.path.join(into, "tree.tar")
    with open(path, "wb") as f:
        f.write(archive)
    with tarfile.open(path) as tar:
        tar.extractall(into, filter="data")
    return into

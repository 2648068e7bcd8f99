"""Repositories built with the real `git` CLI, and `git` itself as the oracle.

The server never runs git; these fixtures do, to build histories and to get
the answer git gives for the same question (differential tests). `git` here
runs with no system or global config (`GIT_CONFIG_NOSYSTEM`, a fresh HOME).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from app.fs.history import inflate
from app.security.resolve import Root
from tests.kit import secure_root

SECRET = "SECRET=hunter2-do-not-leak"
KEY = "-----BEGIN PRIVATE KEY-----\nMIIkeycontentdonotleak\n-----END PRIVATE KEY-----\n"
BIG_LINES = 40_000  # a large file: about 1.3 MB


def git_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(
        HOME=str(home), GIT_CONFIG_NOSYSTEM="1", GIT_AUTHOR_NAME="Ada",
        GIT_AUTHOR_EMAIL="ada@x.org", GIT_COMMITTER_NAME="Ada", GIT_COMMITTER_EMAIL="ada@x.org",
        LC_ALL="C",
    )
    return env


@dataclass
class Repo:
    path: Path
    home: Path

    def git(self, *args: str, stdin: bytes | None = None) -> str:
        out = subprocess.run(
            ["git", "-C", str(self.path), *args], input=stdin, env=git_env(self.home),
            capture_output=True, check=True, timeout=60,
        )
        return out.stdout.decode("utf-8", "replace")

    def commit(self, message: str, when: int) -> str:
        stamp = f"@{when} +0000"
        subprocess.run(
            ["git", "-C", str(self.path), "commit", "-q", "--allow-empty", "-m", message],
            env={**git_env(self.home), "GIT_AUTHOR_DATE": stamp, "GIT_COMMITTER_DATE": stamp},
            check=True, capture_output=True, timeout=60,
        )
        return self.git("rev-parse", "HEAD").strip()

    def write(self, rel: str, text: str | bytes) -> None:
        p = self.path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(text.encode() if isinstance(text, str) else text)


def make_root(
    path: Path, name: str = "repo", deny: tuple[str, ...] = (), max_read: int = 1 << 20
) -> Root:
    return secure_root(path, name=name, role="reference", deny=deny, max_read_bytes=max_read)


def app_py(n: int) -> str:
    return f"def main():\n    return {n}\n\n\nif __name__ == '__main__':\n    main()\n"


def build_history(base: Path) -> tuple[Repo, dict[str, str]]:
    """A history with a committed then deleted `.env`, a committed key file, renames,
    a large file, a copy of the secret, a merge, tags. Returns the repo and named ids."""
    home = base / "home"
    home.mkdir(parents=True, exist_ok=True)
    repo = Repo(base / "repo", home)
    repo.path.mkdir(parents=True)
    repo.git("init", "-q", "-b", "main")
    ids: dict[str, str] = {}
    t = 1_700_000_000
    repo.write("README.md", "# Demo\n\nA demo project.\n")
    repo.write("src/app.py", app_py(1))
    repo.write(".env", SECRET + "\n")
    repo.write("config/.env.example", "SECRET=\n")
    repo.git("add", "-A")
    ids["first"] = repo.commit("Initial commit\n\nWith a body line.", t)
    repo.write("src/app.py", app_py(2))
    repo.write("keys/deploy.pem", KEY)
    repo.write(".env", SECRET + "\nTOKEN=second-secret-do-not-leak\n")
    repo.git("add", "-A")
    ids["key"] = repo.commit("Add deploy key and bump app", t + 100)
    repo.git("mv", "src/app.py", "src/main.py")
    repo.write("README.md", "# Demo\n\nA demo project.\nRun src/main.py.\n")
    repo.git("add", "-A")
    ids["rename"] = repo.commit("Rename app to main", t + 200)
    repo.git("tag", "-a", "v1", "-m", "version 1")
    repo.git("tag", "light")
    repo.git("rm", "-q", ".env")
    repo.write("env-copy.txt", SECRET + "\nTOKEN=second-secret-do-not-leak\n")
    repo.write("big.txt", "".join(f"line {i} of a large file\n" for i in range(BIG_LINES)))
    repo.git("add", "-A")
    ids["delete_env"] = repo.commit("Remove .env, add a large file", t + 300)
    repo.write("big.txt", "".join(f"line {i} of a large file\n" for i in range(BIG_LINES - 1))
               + "the last line changed\n")
    repo.write("docs/guide.md", "Guide\n=====\n\nStep one.\nStep two.\n")
    repo.write("logo.bin", bytes(range(256)) * 4)
    repo.git("add", "-A")
    ids["docs"] = repo.commit("Add the guide; change the large file", t + 400)
    repo.git("checkout", "-q", "-b", "feature")
    repo.write("feature.txt", "a feature\n")
    repo.write("docs/guide.md", "Guide\n=====\n\nStep one.\nStep two.\nStep three.\n")
    repo.git("add", "-A")
    ids["feature"] = repo.commit("Feature work", t + 500)
    repo.git("checkout", "-q", "main")
    repo.write("src/main.py", app_py(3))
    repo.git("add", "-A")
    ids["main_side"] = repo.commit("Main side change", t + 600)
    subprocess.run(
        ["git", "-C", str(repo.path), "merge", "-q", "--no-ff", "-m", "Merge feature", "feature"],
        env={**git_env(home), "GIT_AUTHOR_DATE": f"@{t + 700} +0000",
             "GIT_COMMITTER_DATE": f"@{t + 700} +0000"},
        check=True, capture_output=True, timeout=60,
    )
    ids["merge"] = repo.git("rev-parse", "HEAD").strip()
    repo.write("src/main.py", "def main():\n    return 4\n")
    repo.git("add", "-A")
    ids["last"] = repo.commit("Shorten main", t + 800)
    return repo, ids


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> tuple[Repo, dict[str, str]]:
    """One history per test module (read-only tests share it)."""
    return build_history(tmp_path_factory.mktemp("hist"))


@pytest.fixture
def fresh_history(tmp_path: Path) -> tuple[Repo, dict[str, str]]:
    return build_history(tmp_path)


RootMaker = Callable[..., Root]


def fast_history(path: Path, n: int, rare: str = "docs/rare.md", every: int = 50) -> Repo:
    """An `n`-commit linear history made with `git fast-import`: two files changed per
    commit, `rare` every `every` commits, `.env` every 7 commits."""
    home = path.parent / "home"
    home.mkdir(parents=True, exist_ok=True)
    repo = Repo(path, home)
    path.mkdir(parents=True)
    repo.git("init", "-q", "-b", "main")
    out: list[bytes] = []
    for i in range(1, n + 1):
        msg = f"commit {i}\n".encode()
        stamp = f"A <a@x> {1_700_000_000 + i * 60} +0000\n"
        out += [b"commit refs/heads/main\n", f"mark :{i}\n".encode(),
                f"author {stamp}committer {stamp}".encode(), b"data %d\n" % len(msg) + msg]
        if i > 1:
            out.append(f"from :{i - 1}\n".encode())
        changed = [(f"src/m{(i * 7 + k) % 40}.py", f"v{i}\n" * 5) for k in range(2)]
        if i % every == 0 or i == 1:
            changed.append((rare, f"rare {i}\n"))
        if i % 7 == 0:
            changed.append((".env", f"SECRET=secret-{i}-do-not-leak\n"))
        for name, body in changed:
            data = body.encode()
            out += [f"M 100644 inline {name}\n".encode(), b"data %d\n" % len(data) + data + b"\n"]
    repo.git("fast-import", "--quiet", stdin=b"".join(out))
    repo.git("checkout", "-q", "main")
    return repo


@pytest.fixture
def inflated(monkeypatch) -> list[int]:
    """Bytes every zlib stream handed back, in order."""
    produced: list[int] = []
    real = inflate.Stream.read

    def counting(self, n: int) -> bytes:
        got = real(self, n)
        produced.append(len(got))
        return got

    monkeypatch.setattr(inflate.Stream, "read", counting)
    return produced

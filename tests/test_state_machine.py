"""No sequence of tool calls returns denied content or a denied name (docs/security.md),
and none loses what it replaces (docs/configuration.md: every change recoverable).

A hypothesis `RuleBasedStateMachine` drives the fs functions the tools call
(write_file, create_directory, move_file, copy_file, edit_file, apply_patch, delete and
every read and search tool, searches with their options) on a workspace root whose config has
base, floor, config-level, root-level and `/` deny patterns, with a secret
planted under each, and writes ignore files that negate the denied names (`!*.secret`).
Paths are drawn from a small vocabulary that includes the denied names and their
ancestors, so moves of ancestors (`config` -> `x`) come up quickly. After every
call: no answer (result or error text) holds a planted secret, and no listed or
found path is one the rules deny. Every file a change replaced is in the trash
(its `kept_version`) with the bytes it had, and stays there.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from app.corpus import deep_research
from app.errors import LoomError
from app.fs.change import copy, edit, move, trash, write
from app.fs.change import patch as patch_mod
from app.fs.change.edit import TextEdit
from app.fs.control import NoControl
from app.fs.history import ops as git_ops
from app.fs.reading import listing, media
from app.fs.reading import read as read_mod
from app.fs.search.files import search_files as find_files
from app.fs.search.options import FilesOptions, TextOptions
from app.fs.search.text import search_text as find_text
from app.registry import Registry
from app.security.paths import split_request
from tests.kit import dump, roots_toml

SECRET = "S3CRET"
# Where secrets are planted; each path is denied by one kind of rule.
PLANTED = {
    ".env": "base",
    "config/.env.local": "base",
    "id_rsa": "floor",
    "keys/server.pem": "floor",
    "notes.secret": "config-level component pattern (*.secret)",
    "private.md": "root-level component pattern",
    "config/prod.yaml": "root-level / pattern",
    "a/b/inner.txt": "/ pattern naming a folder (a/b)",
    "a/b/c/deep.txt": "/ pattern naming a folder (a/b)",
    "vault/x/y.txt": "config-level / pattern with a wildcard (vault/*/y.txt)",
    # Five levels below `deep`: a move check that stops descending early misses it.
    "deep/a/b/c/d/key.txt": "root-level / pattern whose wildcard spans levels (deep/*/key.txt)",
}
# Ancestors of the deep secret: moving any of them away would carry it out of its rule.
DEEP_ANCESTORS = ["deep", "deep/a", "deep/a/b", "deep/a/b/c", "deep/a/b/c/d"]
NAMES = ["config", "a", "b", "c", "x", "vault", "new", "prod.yaml", "y.txt", "inner.txt", "f.txt",
         "deep"]
# What an ignore file may say, negations of denied names included.
IGNORES = ["!*.secret\n", "*\n!*\n", "!/private.md\n!config/prod.yaml\n", "!a/b/\n!**/*.txt\n",
           "!.env\n!id_rsa\n!keys/\n", "vault/\n!vault/x/y.txt\n"]
path_st = st.lists(st.sampled_from(NAMES), min_size=1, max_size=3).map("/".join)
text_st = st.text(alphabet="abc xyz\n", max_size=40)


CTL = NoControl()


class NeverDenied(RuleBasedStateMachine):
    # Each run starts with a move of an ancestor of the deep secret, so that every run
    # asks the move check to descend all the way (it must refuse: nothing changes).
    @initialize(src=st.sampled_from(DEEP_ANCESTORS), dst=st.sampled_from(["moved", "x", "a/x"]))
    def setup(self, src: str, dst: str) -> None:
        self.tmp = Path(tempfile.mkdtemp(prefix="loom-sm-"))
        ws = self.tmp / "ws"
        ws.mkdir()
        for i, rel in enumerate(PLANTED):
            p = ws / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(f"{SECRET}-{i}\n")
        (ws / "config" / "dev.yaml").write_text("dev: 1\n")
        (ws / "a" / "ok.txt").write_text("fine\n")
        self.git = _commit_everything(ws, self.tmp / "home")
        cfg = self.tmp / "loom.toml"
        cfg.write_text(roots_toml(
            ("ws", ws, "workspace",
             {"deny": ["private.md", "config/prod.yaml", "a/b", "deep/*/key.txt"]}),
            audit_log=self.tmp / "state" / "audit.log",
            extra='deny = ["*.secret", "vault/*/y.txt"]\nsearch_fetch_tools = true',
        ))
        self.reg = Registry(str(cfg), audit=False)
        self.root = self.reg.current.root("ws")
        self.kept: list[tuple[str, bytes]] = []  # (kept_version, the bytes replaced)
        self._answer(lambda: move.move_file(self.root, src, dst))

    def teardown(self) -> None:
        if hasattr(self, "tmp"):
            shutil.rmtree(self.tmp, ignore_errors=True)

    # -- every answer is checked -------------------------------------------

    def _answer(self, fn: Any) -> Any:
        try:
            out = dump(fn())
        except LoomError as exc:
            out = {"error": exc.message}
        text = json.dumps(out, ensure_ascii=False)
        assert SECRET not in text, f"a denied file's content came back: {text[:500]}"
        for path in self._paths_in(out):
            hit = self.root.rules.path(split_request(path))
            assert hit is None, f"a denied path came back: {path!r} (pattern {hit!r})"
        return out

    def _paths_in(self, out: Any) -> list[str]:
        found: list[str] = []
        if isinstance(out, dict):
            for k, v in out.items():
                if k in ("path", "old_path") and isinstance(v, str) and "error" not in out:
                    found.append(v)
                elif k == "id" and isinstance(v, str) and "/" in v:  # search: root/path
                    found.append(v.split("/", 1)[1])
                else:
                    found.extend(self._paths_in(v))
        elif isinstance(out, list):
            for v in out:
                found.extend(self._paths_in(v))
        return found

    def _bytes(self, path: str) -> bytes | None:
        p = self.tmp / "ws" / path
        return p.read_bytes() if p.is_file() and not p.is_symlink() else None

    def _replacing(self, path: str, fn: Any, replaced: Any) -> None:
        """`fn` changes the file at `path`: what it replaced must be in the trash."""
        before = self._bytes(path)
        out = self._answer(fn)
        if "error" in out or before is None or not replaced(out):
            return
        kept = out.get("kept_version")
        assert kept, f"replaced {path!r} and kept nothing: {out}"
        assert (self.tmp / "ws" / kept).read_bytes() == before
        self.kept.append((kept, before))

    # -- changes ------------------------------------------------------------

    @rule(path=path_st, content=text_st, overwrite=st.booleans())
    def write_file(self, path: str, content: str, overwrite: bool) -> None:
        self._replacing(
            path, lambda: write.write_file(self.root, path, content, overwrite=overwrite),
            lambda out: not out["created"],
        )

    @rule(path=path_st)
    def create_directory(self, path: str) -> None:
        self._answer(lambda: write.create_directory(self.root, path))

    @rule(src=path_st, dst=path_st, overwrite=st.booleans())
    def move_file(self, src: str, dst: str, overwrite: bool) -> None:
        self._replacing(
            dst, lambda: move.move_file(self.root, src, dst, overwrite=overwrite),
            lambda out: out["replaced"],
        )

    @rule(src=st.one_of(path_st, st.sampled_from(["config", "a", "vault", "keys", "deep"])),
          dst=path_st, overwrite=st.booleans())
    def copy_file(self, src: str, dst: str, overwrite: bool) -> None:
        self._replacing(
            dst, lambda: copy.copy_file(self.root, src, self.root, dst, overwrite=overwrite),
            lambda out: out["type"] == "file",
        )

    @rule(src=st.sampled_from(["config", "a", "a/b", "vault", "vault/x", "keys", *DEEP_ANCESTORS]),
          dst=path_st)
    def move_an_ancestor(self, src: str, dst: str) -> None:
        self._answer(lambda: move.move_file(self.root, src, dst))

    @rule(path=path_st, old=text_st, new=text_st)
    def edit_file(self, path: str, old: str, new: str) -> None:
        self._replacing(
            path,
            lambda: edit.edit_file(
                self.root, path, [TextEdit(old_text=old or "a", new_text=new)],
                max_output_chars=10000,
            ),
            lambda out: out["written"],
        )

    @rule(src=st.one_of(path_st, st.sampled_from(["config/dev.yaml", "a/ok.txt", *PLANTED])),
          dst=st.one_of(path_st, st.sampled_from(["a/b/moved", "vault/q/y.txt", "m.txt"])),
          line=text_st, moved=st.booleans(), gone=st.one_of(st.none(), st.none(), path_st))
    def apply_patch(self, src: str, dst: str, line: str, moved: bool, gone: str | None) -> None:
        """A line appended to `src` (moved to `dst`, or not), and `gone` deleted when
        given, in one patch: what it replaced or deleted is in the trash."""
        body = [f"*** Update File: {src}", *([f"*** Move to: {dst}"] if moved else []),
                "@@", *(f"+{x}" for x in line.split("\n"))]
        if gone is not None:
            body.append(f"*** Delete File: {gone}")
        patch = "\n".join(["*** Begin Patch", *body, "*** End Patch"]) + "\n"
        before = [self._bytes(p) for p in (src, gone) if p is not None]
        out = self._answer(lambda: patch_mod.apply_patch(self.root, patch)[0])
        if "error" in out:
            return
        for f, was in zip(out["files"], before, strict=True):
            kept = f.get("kept_version")
            assert kept and was is not None, f"replaced {f['path']!r} and kept nothing: {out}"
            assert (self.tmp / "ws" / kept).read_bytes() == was
            self.kept.append((kept, was))

    @rule(path=path_st)
    def delete(self, path: str) -> None:
        self._answer(lambda: trash.delete(self.root, path))

    # -- reads and searches -----------------------------------------------------

    @rule(path=st.one_of(st.just(""), path_st))
    def list_directory(self, path: str) -> None:
        self._answer(
            lambda: listing.list_directory(
                self.root, path, recursive=True, max_depth=8, offset=0, limit=1000,
                cap=1 << 20, control=CTL,
            )
        )

    @rule(path=path_st)
    def stat_path(self, path: str) -> None:
        self._answer(lambda: listing.stat_path(self.root, path))

    @rule(path=path_st)
    def read_text_file(self, path: str) -> None:
        self._answer(
            lambda: read_mod.read_text_file(
                self.root, path, start=1, end=300, tail=None, cap=1 << 20
            )
        )

    @rule(paths=st.lists(path_st, min_size=1, max_size=3))
    def read_multiple_files(self, paths: list[str]) -> None:
        self._answer(
            lambda: read_mod.read_multiple_files(self.root, paths, cap=1 << 20, control=CTL)
        )

    @rule(path=path_st)
    def read_media_file(self, path: str) -> None:
        self._answer(lambda: media.read_media(self.root, path))

    @rule(path=st.sampled_from([".gitignore", ".ignore", "a/.gitignore", "config/.ignore"]),
          content=st.sampled_from(IGNORES))
    def write_ignore_file(self, path: str, content: str) -> None:
        # Ignore files are for noise: a negation in one never re-opens a denied name.
        self._answer(lambda: write.write_file(self.root, path, content, overwrite=True))

    @rule(pattern=st.sampled_from(["*", "**/*.txt", "*.yaml", "prod*", "*.secret"]),
          no_ignore=st.booleans())
    def search_files(self, pattern: str, no_ignore: bool) -> None:
        self._answer(
            lambda: find_files(self.root, FilesOptions(
                pattern=pattern, offset=0, limit=1000, cap=1 << 20, no_ignore=no_ignore,
            ), CTL)
        )

    @rule(query=st.sampled_from([SECRET, "S3", "fine", "a"]), regex=st.booleans(),
          mode=st.sampled_from(["content", "files_with_matches", "count"]),
          context=st.sampled_from([0, 2]), no_ignore=st.booleans())
    def search_text(self, query: str, regex: bool, mode: str, context: int,
                    no_ignore: bool) -> None:
        self._answer(
            lambda: find_text(self.root, TextOptions(
                query=query, file_glob="*", case_sensitive=False, offset=0,
                limit=1000, cap=1 << 20, file_limit=1 << 20, budget=1 << 24,
                regex=regex, output_mode=mode, context=context if mode == "content" else 0,
                no_ignore=no_ignore,
            ), CTL)
        )

    @rule(pattern=st.sampled_from([r"S3C.ET", r"(?i)^s3cret-\d", r"[A-Z0-9]{6}", "."]))
    def search_text_regex(self, pattern: str) -> None:
        self._answer(
            lambda: find_text(self.root, TextOptions(
                query=pattern, file_glob="*", case_sensitive=True, offset=0,
                limit=1000, cap=1 << 20, file_limit=1 << 20, budget=1 << 24,
                regex=True, context=1, no_ignore=True,
            ), CTL)
        )

    @rule(query=st.sampled_from([SECRET, "fine", "yaml"]))
    def research_search(self, query: str) -> None:
        out = self._answer(lambda: deep_research.search(self.reg.current, query, CTL))
        for r in out.get("results", []):
            self._answer(lambda r=r: deep_research.fetch(self.reg.current, r["id"]))

    @rule(path=path_st)
    def research_fetch(self, path: str) -> None:
        self._answer(lambda: deep_research.fetch(self.reg.current, f"ws/{path}"))

    @rule(path=st.one_of(st.just(""), path_st))
    def git_log(self, path: str) -> None:
        if self.git:
            self._answer(lambda: git_ops.git_log(
                self.root, path=path, commit="HEAD", offset=0, limit=50, cursor=None,
                cap=1 << 20, control=CTL,
            ))

    @rule(path=st.one_of(st.none(), path_st, st.sampled_from(sorted(PLANTED))))
    def git_show(self, path: str | None) -> None:
        if self.git:
            self._answer(lambda: git_ops.git_show(
                self.root, commit="HEAD", path=path, start_line=1, end_line=300, offset=0,
                cap=1 << 20, control=CTL,
            ))

    @rule(path=st.one_of(st.just(""), path_st))
    def git_diff(self, path: str) -> None:
        if self.git:
            self._answer(lambda: git_ops.git_diff(
                self.root, base="HEAD", target=None, path=path, offset=0, cap=1 << 20,
                read_budget=1 << 24, control=CTL,
            ))

    @invariant()
    def secrets_stay_denied_where_they_lie(self) -> None:
        # Wherever the calls so far have put a planted secret (the trash included), the
        # rules deny its path: a move that carried one out of its rule fails here at once,
        # before any read has to find it.
        if hasattr(self, "tmp"):
            ws = self.tmp / "ws"
            for p in ws.rglob("*"):
                if p.is_file() and not p.is_symlink() and SECRET in p.read_text(errors="replace"):
                    rel = p.relative_to(ws).parts
                    assert self.root.rules.path(rel) is not None, f"{'/'.join(rel)} is not denied"

    @invariant()
    def nothing_replaced_is_lost(self) -> None:
        for kept, data in getattr(self, "kept", []):
            assert (self.tmp / "ws" / kept).read_bytes() == data, f"{kept} changed or went"

    @invariant()
    def secrets_stay_on_disk(self) -> None:
        # Sanity: the planted secrets are still there to be found (nothing erased them).
        if hasattr(self, "tmp"):
            found = sum(
                1 for p in (self.tmp / "ws").rglob("*")
                if ".git" not in p.parts and p.is_file()
                and re.match(SECRET, p.read_text(errors="replace"))
            )
            assert found == len(PLANTED)


def _commit_everything(top: Path, home: Path) -> bool:
    """The planted tree as one commit (secrets included), for the history tools."""
    if shutil.which("git") is None:
        return False
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(HOME=str(home), GIT_CONFIG_NOSYSTEM="1", GIT_AUTHOR_NAME="A",
               GIT_AUTHOR_EMAIL="a@x.org", GIT_COMMITTER_NAME="A", GIT_COMMITTER_EMAIL="a@x.org")
    for args in (["init", "-q"], ["add", "-A", "-f"], ["commit", "-q", "-m", "all"]):
        subprocess.run(["git", "-C", str(top), *args], env=env, check=True,
                       capture_output=True, timeout=60)
    return True


NeverDenied.TestCase.settings = settings(
    max_examples=60,
    stateful_step_count=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
test_no_sequence_of_calls_returns_denied_content = NeverDenied.TestCase

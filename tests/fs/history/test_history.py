"""git_log / git_show / git_diff equal what `git` itself says, less denied paths.

The oracle is the real `git` CLI run in the test on the same repository; the
code under test never runs it. Denied paths (`.env`, `*.pem`) are removed from
git's answer before comparing, and their content must never appear.
"""

from __future__ import annotations

import re

import pytest

from app.errors import DeniedName, LoomError, NotFound
from app.fs.control import NoControl
from app.fs.history import ops
from tests.fs.history.conftest import KEY, SECRET, Repo, make_root

DENIED = re.compile(r"(^|/)(\.env|[^/]*\.pem)$")
CAP = 65536


def log(root, **kw):
    args = dict(path="", commit="HEAD", offset=0, limit=100, cursor=None, cap=CAP,
                control=NoControl())
    args.update(kw)
    return ops.git_log(root, **args)


def show(root, commit, **kw):
    args = dict(path=None, start_line=1, end_line=300, offset=0, cap=CAP, control=NoControl())
    args.update(kw)
    return ops.git_show(root, commit=commit, **args)


def diff(root, **kw):
    args = dict(base="HEAD", target=None, path="", offset=0, cap=CAP, read_budget=1 << 26,
                control=NoControl())
    args.update(kw)
    return ops.git_diff(root, **args)


def no_secret(result) -> None:
    text = result.model_dump_json()
    assert "hunter2" not in text and "do-not-leak" not in text and "MIIkey" not in text


@pytest.fixture(scope="module")
def repo(history):
    return history[0]


@pytest.fixture(scope="module")
def ids(history):
    return history[1]


@pytest.fixture(scope="module")
def root(repo):
    return make_root(repo.path)


# -- log -------------------------------------------------------------------


@pytest.mark.parametrize("start", ["HEAD", "main", "feature", "v1", "light", "HEAD~2", "HEAD~1^2"])
def test_log_equals_git_log(repo: Repo, root, start: str) -> None:
    got = log(root, commit=start)
    want = repo.git("log", "--format=%H%x00%an <%ae>%x00%aI%x00%s", start).splitlines()
    assert [(c.id, c.author, c.date, c.subject) for c in got.commits] == [
        tuple(line.split("\0")) for line in want
    ]
    assert got.has_more is False and got.next_cursor is None
    no_secret(got)


@pytest.mark.parametrize(
    "path", ["src/main.py", "src/app.py", "src", "docs/guide.md", "README.md", "big.txt",
             "feature.txt", "config/.env.example", "nowhere.txt", "docs"],
)
def test_log_by_path_equals_git_log(repo: Repo, root, path: str) -> None:
    got = log(root, path=path)
    want = repo.git("log", "--format=%H", "--", path).split()
    assert [c.id for c in got.commits] == want


@pytest.mark.parametrize("path", [".env", "keys/deploy.pem", "sub/.ENV", "keys/x.pem/y"])
def test_log_of_a_denied_path_is_refused(root, path: str) -> None:
    with pytest.raises(DeniedName, match="matches deny pattern"):
        log(root, path=path)


def test_log_pages_walk_the_whole_history_once(repo: Repo, root) -> None:
    want = repo.git("log", "--format=%H").split()
    seen: list[str] = []
    page = log(root, limit=2)
    while True:
        seen += [c.id for c in page.commits]
        if not page.has_more:
            break
        page = log(root, limit=2, cursor=page.next_cursor)
    assert seen == want
    by_offset = [c.id for c in log(root, offset=3, limit=2).commits]
    assert by_offset == want[3:5]


# -- show ------------------------------------------------------------------

NAME_STATUS = {"A": "added", "D": "deleted", "M": "modified", "T": "type_changed"}


def git_files(repo: Repo, commit: str) -> list[tuple[str, str, str | None]]:
    parents = repo.git("rev-list", "--parents", "-n1", commit).split()[1:]
    args = ["diff-tree", "-r", "-M100%", "--name-status", "--no-commit-id"]
    out = repo.git(*args, parents[0], commit) if parents else repo.git(*args, "--root", commit)
    files: list[tuple[str, str, str | None]] = []
    for line in out.splitlines():
        f = line.split("\t")
        if f[0].startswith("R"):
            files.append((f[2], "renamed", f[1]))
        else:
            files.append((f[1], NAME_STATUS[f[0]], None))
    return sorted(files, key=lambda x: x[0].encode())


@pytest.mark.parametrize("name", ["first", "key", "rename", "delete_env", "docs", "merge", "last"])
def test_show_equals_git_less_denied(repo: Repo, root, ids, name: str) -> None:
    commit = ids[name]
    got = show(root, commit)
    want = git_files(repo, commit)
    # A rename from a denied path shows as the new path added (the old name stays hidden).
    visible = [
        (f[0], "added", None) if f[1] == "renamed" and DENIED.search(f[2] or "") else f
        for f in want
        if not DENIED.search(f[0])
    ]
    assert [(f.path, f.change, f.old_path) for f in got.files] == visible
    hidden = {f[0] for f in want if DENIED.search(f[0])} | {
        f[2] for f in want if f[2] and DENIED.search(f[2])
    }
    assert got.hidden_denied == len(hidden)
    if got.hidden_denied:
        assert "hidden by deny rules" in (got.note or "")
    meta = repo.git("show", "-s", "--format=%H%x00%an <%ae>%x00%aI%x00%P%x00%B", commit)
    h, author, date, parents, message = meta.split("\0")
    assert (got.id, got.author, got.date, got.parents) == (h, author, date, parents.split())
    assert got.message.rstrip("\n") == message.rstrip("\n")
    no_secret(got)


@pytest.mark.parametrize(
    ("commit", "path"),
    [("first", "src/app.py"), ("key", "src/app.py"), ("rename", "src/main.py"),
     ("last", "src/main.py"), ("docs", "docs/guide.md"), ("feature", "feature.txt"),
     ("first", "config/.env.example"), ("last", "README.md")],
)
def test_show_path_equals_file_at_revision(repo: Repo, root, ids, commit: str, path: str) -> None:
    got = show(root, ids[commit], path=path).file
    want = repo.git("show", f"{ids[commit]}:{path}").splitlines()
    assert got is not None and got.eof_reached
    assert got.content.split("\n") == [f"{i} | {line}" for i, line in enumerate(want, 1)]


@pytest.mark.parametrize("spelling", ["full", "abbrev", "branch", "tag", "ancestry"])
def test_commits_are_named_every_way(repo: Repo, root, ids, spelling: str) -> None:
    rev = {
        "full": ids["rename"], "abbrev": ids["rename"][:7], "branch": "feature", "tag": "v1",
        "ancestry": "HEAD~1^2",
    }[spelling]
    assert show(root, rev).id == repo.git("rev-parse", f"{rev}^{{commit}}").strip()


@pytest.mark.parametrize(
    ("rev", "error"),
    [("nosuch", NotFound), ("HEAD~99", NotFound), ("HEAD^3", NotFound), ("a b", LoomError),
     ("HEAD:README.md", LoomError), ("../../etc", LoomError), ("0000", NotFound),
     ("HEAD~10001", LoomError), ("HEAD~5000~5001", LoomError), ("/etc/passwd", LoomError)],
)
def test_bad_revisions_are_clear_errors(root, rev: str, error: type) -> None:
    with pytest.raises(error):
        show(root, rev)


@pytest.mark.parametrize(
    ("commit", "path"),
    [("first", ".env"), ("key", ".env"), ("key", "keys/deploy.pem"), ("last", "keys/deploy.pem"),
     ("first", ".ENV"), ("first", "src/../.env")],
)
def test_show_of_a_denied_path_is_refused_at_every_commit(root, ids, commit, path) -> None:
    with pytest.raises(DeniedName, match=r"matches deny pattern '(\.env|\*\.pem)'"):
        show(root, ids[commit], path=path)


@pytest.mark.parametrize("commit", ["delete_env", "docs", "last"])
def test_a_copy_of_a_denied_file_is_withheld_at_every_later_commit(root, ids, commit) -> None:
    # env-copy.txt holds the .env of commit "key"; from commit "docs" on, no .env exists.
    with pytest.raises(DeniedName, match="same content as a file at a denied path"):
        show(root, ids[commit], path="env-copy.txt")


@pytest.mark.parametrize("deny", ["secrets", "conf/secrets"], ids=["name", "path"])
def test_a_copy_of_a_file_below_a_denied_directory_is_withheld(tmp_path, deny) -> None:
    """Every blob below a denied directory counts, at any depth, for a rule on names and
    for one on whole paths."""
    repo = Repo(tmp_path / "repo", tmp_path / "home")
    repo.home.mkdir()
    repo.path.mkdir()
    repo.git("init", "-q", "-b", "main")
    repo.write("conf/secrets/top.txt", "top-secret do-not-leak\n")
    repo.write("conf/secrets/deep/er/key.txt", KEY)
    repo.write("conf/plain.txt", "plain\n")
    repo.git("add", "-A")
    repo.commit("secrets", 1_700_000_000)
    repo.git("rm", "-q", "-r", "conf/secrets")
    repo.write("notes/top.txt", "top-secret do-not-leak\n")
    repo.write("notes/key.txt", KEY)
    repo.git("add", "-A")
    repo.commit("copies", 1_700_000_100)
    root = make_root(repo.path, deny=(deny,))
    for copy in ("notes/top.txt", "notes/key.txt"):
        with pytest.raises(DeniedName, match="same content as a file at a denied path"):
            show(root, "HEAD", path=copy)
    assert show(root, "HEAD", path="conf/plain.txt").file is not None


# -- diff ------------------------------------------------------------------


def git_diff_lines(repo: Repo, *revs: str) -> dict[str, tuple[list[str], list[str]]]:
    out = repo.git("diff", "-M100%", "--no-color", "-U3", *revs)
    files: dict[str, tuple[list[str], list[str]]] = {}
    cur: tuple[list[str], list[str]] | None = None
    for line in out.splitlines():
        if line.startswith("diff --git "):
            name = line.split(" b/", 1)[1]
            cur = files.setdefault(name, ([], []))
        elif line.startswith(("+++", "---")):
            continue
        elif cur is not None and line.startswith("+"):
            cur[0].append(line[1:])
        elif cur is not None and line.startswith("-"):
            cur[1].append(line[1:])
    return files


@pytest.mark.parametrize(
    ("a", "b"),
    [("first", "key"), ("key", "rename"), ("rename", "delete_env"), ("key", "last"),
     ("first", "last"),
     ("docs", "feature"), ("main_side", "merge")],
)
def test_diff_between_commits_equals_git(repo: Repo, root, ids, a: str, b: str) -> None:
    got = diff(root, base=ids[a], target=ids[b])
    want = {k: v for k, v in git_diff_lines(repo, ids[a], ids[b]).items() if not DENIED.search(k)}
    mine = {f.path: f for f in got.files}
    assert set(mine) == set(want) | {f.path for f in got.files if f.note}
    for path, (plus, minus) in want.items():
        f = mine[path]
        if f.diff is None:
            assert f.note  # too large, binary or withheld: said so
            continue
        lines = f.diff.split("\n") if f.diff else []
        assert [x[1:] for x in lines if x.startswith("+")] == plus
        assert [x[1:] for x in lines if x.startswith("-")] == minus
    no_secret(got)


def test_diff_of_the_working_tree_reads_through_the_choke_point(fresh_history) -> None:
    repo, _ = fresh_history
    (repo.path / "README.md").write_text("# Changed\n")
    (repo.path / "docs" / "guide.md").unlink()
    (repo.path / "src" / "main.py").unlink()
    (repo.path / "src" / "main.py").symlink_to("../.env")  # a tracked file now a link to a secret
    (repo.path / ".env").write_text(SECRET + "\n")
    (repo.path / "staged.txt").write_text("new and staged\n")
    (repo.path / ".env.local").write_text(SECRET + "\n")
    (repo.path / "untracked.txt").write_text("not in the index\n")
    repo.git("add", "-f", "staged.txt", ".env.local")
    root = make_root(repo.path)
    got = diff(root)
    want = {k: v for k, v in git_diff_lines(repo, "HEAD").items() if not DENIED.search(k)}
    mine = {f.path: f for f in got.files}
    assert mine["README.md"].change == "modified"
    plus, minus = want["README.md"]
    lines = (mine["README.md"].diff or "").split("\n")
    assert [x[1:] for x in lines if x.startswith("+")] == plus
    assert [x[1:] for x in lines if x.startswith("-")] == minus
    assert mine["docs/guide.md"].change == "deleted"
    # As `git diff HEAD`: a staged new file is added, an untracked one is not listed.
    staged = mine["staged.txt"]
    assert staged.change == "added" and staged.diff == "@@ -0,0 +1 @@\n+new and staged"
    assert want["staged.txt"] == (["new and staged"], [])
    assert "untracked.txt" not in mine and ".env.local" not in mine
    assert set(mine) <= set(want) | {"src/main.py"}
    assert "src/main.py" not in mine  # its in-root target is denied: hidden, counted
    assert got.hidden_denied >= 1
    no_secret(got)


@pytest.mark.parametrize("damage", ["not-an-index", "cut-short"])
def test_a_damaged_index_is_said_not_passed_over(fresh_history, damage) -> None:
    """The files staged after the damage cannot be listed: the answer says so."""
    repo, _ = fresh_history
    (repo.path / "staged.txt").write_text("new and staged\n")
    repo.git("add", "staged.txt")
    index = repo.path / ".git" / "index"
    data = index.read_bytes()
    index.write_bytes(b"garbage!" * 8 if damage == "not-an-index" else data[: len(data) // 2])
    got = diff(make_root(repo.path))
    assert ".git/index is damaged" in (got.note or "")
    index.write_bytes(data)  # whole again: no such note, the staged file listed
    again = diff(make_root(repo.path))
    assert ".git/index is damaged" not in (again.note or "")
    assert "staged.txt" in {f.path for f in again.files}


def test_denied_paths_are_absent_at_every_commit(repo: Repo, root) -> None:
    every = repo.git("rev-list", "--all").split()
    for commit in every:
        got = show(root, commit)
        assert not any(DENIED.search(f.path) or DENIED.search(f.old_path or "") for f in got.files)
        no_secret(got)
    for older in every:
        for newer in every:
            got = diff(root, base=older, target=newer)
            assert not any(DENIED.search(f.path) for f in got.files)
            no_secret(got)
    assert KEY and SECRET

"""`apply_patch`: one patch's changes to the files of a root, all of them or none.

Look (nothing changes): the patch parsed (`patch_parse`); every path authorized for its
operation (add, update, move: `write`; delete: `delete`), then opened through the choke
point (`Root.open_parent`: confinement, deny rules and the floor on the request and on
where it resolves, the server's own files); an added or moved-to path no deeper than
MAX_DEPTH (`write.refuse_deep`, on the request and where it resolves) and free; every other
entry a regular file. A path named by two sections is refused, except Update sections of
one file, applied one after the other.

Place (nothing changes): the keys of every existing entry held (`locks.changing`, as
edit_file holds them) from here to the last write; each file read whole (within the root's
max_read_bytes, and MAX_READ_TOTAL for the patch) and decoded as edit_file does (encoding,
BOM; `edit.decode`), every hunk placed (`patch_place`: the levels, line endings kept), each
new content encoded and sized; `pay` then takes the bytes to be written. Any refusal so
far changes nothing.

Write, file by file, each step undoable: an added file is created (its missing folders
made, `folders`; never over a file that appeared meanwhile); a changed file is replaced
atomically after its lost-update check, its old content kept as a version
(`versions.Keeper`); a moved file is renamed (never over an existing entry), or, when its
content changes too, its old content kept, the new one written at the destination and the
old name removed; a removed file goes into the trash (`trash.Slot`), as `delete` puts it.
A failure or a cancel midway undoes what was done, last first (a replaced file's content
written back, an added file removed, a moved or removed file moved back), and raises: the
root is as it was. A kill midway (nothing can undo then) leaves each file whole, old or
new (every write is a rename), some files new and others old, the replaced ones kept in
the trash.

Directories, links and special files are never patched: a patch changes regular files.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from dataclasses import dataclass, field

from pydantic import BaseModel

from app.errors import (
    AlreadyExists,
    BadArgument,
    FileChanged,
    LoomError,
    NotFound,
    OSRefusal,
    TooLarge,
    os_error,
)
from app.fs.change.atomic import Identity, fsync_dir, replace_file
from app.fs.change.edit import Matched, decode
from app.fs.change.folders import Made, open_parent_making
from app.fs.change.layout import TRASH
from app.fs.change.ledger import settle
from app.fs.change.locks import changing
from app.fs.change.patch_diff import patch_diff
from app.fs.change.patch_parse import parse
from app.fs.change.patch_place import Searched, check_removed, place_all, reworded
from app.fs.change.patch_types import ADD, DELETE, UPDATE, FilePatch
from app.fs.change.trash import Slot
from app.fs.change.versions import Keeper
from app.fs.change.write import encode_content, existing_target, read_current, refuse_deep
from app.fs.control import Control, NoControl, Pay
from app.security import ops
from app.security.paths import join
from app.security.resolve import Parent, Root

OP = "apply_patch"
MAX_READ_TOTAL = 256 << 20  # bytes of the files one patch reads, all together
DIFF_MARGIN = 64  # characters kept for the diff's cut line and the JSON around it
ADDED, MODIFIED, DELETED, MOVED = "added", "modified", "deleted", "moved"


class PatchedFile(BaseModel):
    path: str
    change: str  # added | modified | deleted | moved
    moved_from: str | None = None
    kept_version: str | None = None  # where the replaced or removed content went (under the root)
    # per hunk: its first line in the file as read (a later Update section of the same file:
    # as the one before left it) and the level that placed it
    matches: list[Matched] = []


class PatchResult(BaseModel):
    files: list[PatchedFile]
    diff: str  # unified, of what was done (would be done, for a dry run)
    dry_run: bool = False


@dataclass
class Step:
    """One file's part of the patch, from the look to the write."""

    fp: FilePatch
    parts: tuple[str, ...]  # the request's, normalised
    src: Parent | None = None  # the file there now (update, delete, a move's source)
    new_parts: tuple[str, ...] | None = None  # a new entry: an add's, a move's destination
    dst: Parent | None = None  # its parent, when its folder exists
    more: list[FilePatch] = field(default_factory=list)  # later Update sections of the file
    seen: os.stat_result | None = None
    raw: bytes = b""
    before: str = ""
    after: str = ""
    new_raw: bytes | None = None  # to write; None: the content stays as it is
    matches: list[Matched] = field(default_factory=list)
    kept: str | None = None

    @property
    def change(self) -> str:
        if self.fp.op == ADD:
            return ADDED
        if self.fp.op == DELETE:
            return DELETED
        return MOVED if self.fp.move_to is not None else MODIFIED

    @property
    def rel(self) -> str:
        """The file's path in the answer: where it is after the patch (a removed file's)."""
        return join(self.new_parts if self.new_parts is not None else self.parts)

    @property
    def old_rel(self) -> str:
        return join(self.parts)


Undo = tuple[str, Callable[[], None]]  # (the file, how to put back what was done to it)


def apply_patch(
    root: Root,
    patch: str,
    *,
    dry_run: bool = False,
    control: Control | None = None,
    pay: Pay | None = None,
) -> tuple[PatchResult, list[Step]]:
    """The patch applied (or, `dry_run`, only placed); the answer without its diff, and the
    steps (`with_diff` adds the diff of them). `pay` is the byte budget: the bytes to
    write, paid once every hunk is placed and before the first write."""
    control = control or NoControl()
    parsed = parse(patch)
    with contextlib.ExitStack() as stack:
        steps = _look(root, parsed.files, stack)
        parents = [p for s in steps for p in (s.src, s.dst) if p is not None]
        keys = contextlib.nullcontext() if dry_run else changing(*parents, wait=control.check)
        try:
            with keys:
                _place(root, steps, parsed.format, control)
                if not dry_run:
                    if pay is not None:
                        for s in steps:
                            if s.new_raw is not None:
                                pay(len(s.new_raw), s.rel)
                    _write_all(root, steps, control, stack)
        except LoomError:
            raise
        except OSError as exc:  # what was written is put back by then (`_write_all`)
            err = os_error(exc)
            raise reworded(err, f"{err.message}; nothing was changed") from None
    files = [PatchedFile(path=s.rel, change=s.change,
                         moved_from=s.old_rel if s.change == MOVED else None,
                         kept_version=s.kept,
                         matches=s.matches)
             for s in steps]
    return PatchResult(files=files, diff="", dry_run=dry_run), steps


def with_diff(result: PatchResult, steps: list[Step], max_output_chars: int,
              control: Control) -> PatchResult:
    """The answer with its diff, cut to what the rest of it leaves of `max_output_chars`."""
    budget = max(0, max_output_chars - len(result.model_dump_json()) - DIFF_MARGIN)
    return result.model_copy(update={"diff": patch_diff(steps, budget, control)})


# -- look ---------------------------------------------------------------------------------


def _look(root: Root, files: tuple[FilePatch, ...], stack: contextlib.ExitStack) -> list[Step]:
    """Every path checked before any is opened, then opened; a path two sections name
    refused (Update sections of one file chained)."""
    steps: list[Step] = []
    named: dict[tuple[str, ...], tuple[Step, int]] = {}
    for fp in files:
        perm = "delete" if fp.op == DELETE else "write"
        parts = root.authorize(fp.path, perm=perm, op=OP)
        step = Step(fp, parts)
        if fp.op == ADD:
            step.new_parts, step.parts = parts, parts
        elif fp.move_to is not None:
            step.new_parts = root.authorize(fp.move_to, perm="write", op=OP)
            if step.new_parts == parts:
                raise BadArgument(f"patch line {fp.line}: '{fp.path}' is moved to itself")
        if step.new_parts is not None:
            refuse_deep(root, step.new_parts, OP)
        earlier = named.get(parts)
        if (earlier is not None and fp.op == UPDATE == earlier[0].fp.op
                and fp.move_to is None and earlier[0].fp.move_to is None):
            earlier[0].more.append(fp)
            continue
        for p in dict.fromkeys(x for x in (parts, step.new_parts) if x is not None):
            if p in named:
                raise _twice(join(p), named[p][1], fp.line)
            named[p] = (step, fp.line)
        steps.append(step)
    seen: dict[tuple[str, ...], int] = {}
    for step in steps:
        _open(root, step, stack)
        for entry in (step.src, step.dst):
            if entry is None:
                continue
            if entry.target_parts in seen:  # two requests reaching one entry through links
                raise _twice(entry.rel, seen[entry.target_parts], step.fp.line)
            seen[entry.target_parts] = step.fp.line
    return steps


def _twice(rel: str, first: int, then: int) -> BadArgument:
    return BadArgument(f"'{rel}' is named by two sections of the patch (lines {first} and "
                       f"{then}); give each file one section")


def _open(root: Root, step: Step, stack: contextlib.ExitStack) -> None:
    fp = step.fp
    if fp.op != ADD:
        perm = "delete" if fp.op == DELETE else "write"
        step.src = stack.enter_context(root.open_parent(fp.path, op=OP, perm=perm))
        if existing_target(step.src) is None:
            what = "delete" if fp.op == DELETE else "update"
            raise NotFound(f"no such file: '{step.src.rel}' (patch line {fp.line} would "
                           f"{what} it); nothing was changed")
    if step.new_parts is not None:
        step.dst = _parent_if_there(root, join(step.new_parts), stack)
        if step.dst is not None:
            _refuse_taken(root, step.dst, fp)


def _parent_if_there(root: Root, path: str, stack: contextlib.ExitStack) -> Parent | None:
    try:
        return stack.enter_context(root.open_parent(path, op=OP, perm="write"))
    except NotFound:
        return None  # its folder is missing: made when written


def _refuse_taken(root: Root, dst: Parent, fp: FilePatch) -> None:
    refuse_deep(root, dst.target_parts, OP)
    if dst.lstat() is not None:
        how = "an Add File" if fp.op == ADD else "a move"
        raise AlreadyExists(f"'{dst.rel}' already exists (patch line {fp.line}): {how} never "
                            "replaces a file; update it instead; nothing was changed")


# -- place --------------------------------------------------------------------------------


def _place(root: Root, steps: list[Step], fmt: str, control: Control) -> None:
    searched = Searched()
    read = 0
    for step in steps:
        control.check()
        fp = step.fp
        if fp.op == ADD:
            step.after = fp.content
            step.new_raw = encode_content(step.after, root)
            continue
        assert step.src is not None
        step.raw, step.seen = read_current(step.src, root.max_read_bytes)
        read += len(step.raw)
        if read > MAX_READ_TOTAL:
            raise TooLarge(f"the patch's files hold more than {MAX_READ_TOTAL} bytes in all; "
                           "split it into smaller patches")
        step.before, enc = decode(step.raw, step.src.rel)
        if fp.op == DELETE:
            check_removed(step.before, fp, control)
            continue
        text = step.before
        for section in (fp, *step.more):
            text, got = place_all(text, section, fmt, control, searched)
            step.matches += got
        step.after = text
        new_raw = enc.encode(text)
        if len(new_raw) > root.max_read_bytes:
            raise TooLarge(f"'{step.src.rel}' would be {len(new_raw)} bytes, above root "
                           f"'{root.name}' max_read_bytes ({root.max_read_bytes}); nothing "
                           "was changed")
        if new_raw != step.raw:
            step.new_raw = new_raw


# -- write --------------------------------------------------------------------------------


def _write_all(root: Root, steps: list[Step], control: Control,
               stack: contextlib.ExitStack) -> None:
    done: list[Undo] = []
    trashed: list[str] = []
    try:
        for step in steps:
            control.check()
            _write(root, step, done, trashed, stack)
    except BaseException as exc:
        left = _undo(done)
        if left:
            why = exc.message if isinstance(exc, LoomError) else "the patch failed midway"
            raise OSRefusal(f"{why}; and {len(left)} change(s) could not be put back: "
                            + ", ".join(f"'{x}'" for x in left)) from None
        raise
    for stamp in trashed:
        settle(root, stamp, "delete")


def _undo(done: list[Undo]) -> list[str]:
    """Every step put back, last first; the files that could not be."""
    left = []
    for rel, back in reversed(done):
        try:
            back()
        except (OSError, LoomError):
            left.append(rel)
    return left


def _write(root: Root, step: Step, done: list[Undo], trashed: list[str],
           stack: contextlib.ExitStack) -> None:
    fp = step.fp
    if fp.op == DELETE:
        assert step.src is not None and step.seen is not None
        _unchanged(step.src, step.seen)
        slot = Slot(root, step.src.target_parts, "delete")
        stack.callback(slot.close)
        src = step.src
        try:
            ops.rename_noreplace(src.fd, src.name, slot.fd, src.name)
        except BaseException:
            slot.undo()
            raise
        done.append((src.rel, lambda: _unslot(slot, src)))
        fsync_dir(src.fd)
        slot.sync()
        trashed.append(slot.stamp)
        step.kept = join((TRASH, slot.id))
        return
    if fp.op == ADD:
        assert step.new_raw is not None
        _create(root, step, step.new_raw, None, done, stack)
        return
    assert step.src is not None and step.seen is not None
    src, seen = step.src, step.seen
    if fp.move_to is None:
        if step.new_raw is None:
            return  # the hunks leave the file as it was
        keeper = Keeper(root, src, seen, op="patch")
        replace_file(src.fd, src.name, step.new_raw, replace=True, like=seen,
                     guard=keeper.guarded(lambda: _unchanged(src, seen)))
        step.kept = keeper.kept
        raw = step.raw
        done.append((src.rel, lambda: replace_file(src.fd, src.name, raw, replace=True,
                                                   like=seen)))
        return
    if step.new_raw is None:  # a rename
        dst = _destination(root, step, done, stack)
        _unchanged(src, seen)
        ops.rename_noreplace(src.fd, src.name, dst.fd, dst.name)
        done.append((src.rel, lambda: ops.rename_noreplace(dst.fd, dst.name, src.fd, src.name)))
        fsync_dir(dst.fd)
        fsync_dir(src.fd)
        return
    # Moved and changed: the old content kept, the new one written there, the old name gone.
    _unchanged(src, seen)
    keeper = Keeper(root, src, seen, op="patch")
    keeper()
    step.kept = keeper.kept
    _create(root, step, step.new_raw, seen, done, stack)
    ops.unlink(src.fd, src.name)  # its keys held: still the file read (then kept)
    raw = step.raw
    done.append((src.rel, lambda: replace_file(src.fd, src.name, raw, replace=False, like=seen)))
    fsync_dir(src.fd)


def _destination(root: Root, step: Step, done: list[Undo],
                 stack: contextlib.ExitStack) -> Parent:
    """The new entry's parent, its missing folders made (and removed again on undo)."""
    if step.dst is not None:
        return step.dst
    assert step.new_parts is not None
    parent, made = open_parent_making(root, step.new_parts, OP)
    stack.enter_context(parent)
    stack.callback(made.close)
    done.append((parent.rel, _remover(made)))
    _refuse_taken(root, parent, step.fp)
    step.dst = parent
    return parent


def _remover(made: Made) -> Callable[[], None]:
    return made.remove


def _create(root: Root, step: Step, data: bytes, like: os.stat_result | None,
            done: list[Undo], stack: contextlib.ExitStack) -> None:
    """`data` as a new file at the step's new path."""
    dst = _destination(root, step, done, stack)
    try:
        replace_file(dst.fd, dst.name, data, replace=False, like=like)
    except FileExistsError:
        raise AlreadyExists(f"'{dst.rel}' was created meanwhile by another program; "
                            "nothing was changed") from None
    made = Identity.of(ops.lstat(dst.fd, dst.name))
    done.append((dst.rel, lambda: _unlink_if(dst, made)))


def _unlink_if(parent: Parent, made: Identity) -> None:
    """Remove the file this patch made, if it is still that file."""
    st = parent.lstat()
    if st is not None and Identity.of(st) == made:
        ops.unlink(parent.fd, parent.name)
        fsync_dir(parent.fd)


def _unslot(slot: Slot, src: Parent) -> None:
    ops.rename_noreplace(slot.fd, src.name, src.fd, src.name)
    slot.undo()


def _unchanged(parent: Parent, seen: os.stat_result) -> None:
    now = parent.lstat()
    if now is None or Identity.of(now) != Identity.of(seen):
        raise FileChanged(f"'{parent.rel}' changed since the patch read it; nothing was "
                          "changed")

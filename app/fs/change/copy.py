"""`copy_file`: a file or a folder, within a root or from one root to another.

The source is opened through its root's choke point with `read` (`open_parent`:
confinement, deny on the request and on the resolved target; its final name is
never followed), the destination through its own root's with `write`. A link as
the source is refused: links are never followed, nor copied (a link copied to
another root would mean something else there). A denied source is never opened,
a denied destination name never written: both requests are checked before the
disk is touched, and a folder's entries against both roots' rules before the
first file is written (`app.fs.change.copy_tree`).

Each file is written under a temp name in the destination's folder, fsynced
and renamed into place (`app.fs.change.atomic.replace_with`): a crash, SIGKILL
included, leaves the old destination or the whole new file, never a part. The
bytes are copied as they are (binary files too), the source's permission bits
kept (set-id bits dropped, as for every write). A source changed while it was
copied (its identity or size moved) is refused, and nothing is written.

No overwrite unless asked: `rename_noreplace` decides at the rename. With
`overwrite=true` only a regular file is replaced, never a directory nor a link,
and the destination's keys (`app.fs.change.locks`) are held from the first look
to the rename, as for every change through the server. The destination's folder
must exist (as with `cp`); a folder is copied only to a new name. Nothing is
copied deeper than MAX_DEPTH levels below the destination's root: a file at
such a path, or a folder holding anything that would lie past it, is refused
before anything is written.
"""

from __future__ import annotations

import stat as stat_mod

from pydantic import BaseModel

from app.errors import IsSymlink, LoomError, NotFound, TooDeep, os_error
from app.fs.change import copy_tree
from app.fs.change.copying import Copied, copy_one
from app.fs.change.move import exists_error, open_destination
from app.fs.control import Control, NoControl, Pay
from app.security.paths import MAX_DEPTH
from app.security.resolve import Root


class CopyResult(BaseModel):
    source: str
    destination: str
    type: str  # file | dir
    files: int  # files copied
    bytes: int  # bytes copied (read from the source, written at the destination)
    truncated: bool  # a folder copy stopped short (the note says where and why)
    # A folder copy's entries that the source root's deny rules hide, left out (counted,
    # never named): when above 0 the copy is incomplete, though nothing stopped it.
    hidden: int = 0
    note: str | None = None
    kept_version: str | None = None  # where a replaced destination file went (under the root)


def copy_file(
    src_root: Root,
    source: str,
    dst_root: Root,
    destination: str,
    *,
    overwrite: bool = False,
    control: Control | None = None,
    pay: Pay | None = None,
) -> CopyResult:
    """`pay` is the byte budget: each file's size is paid before it is written; a refusal
    refuses a file copy whole and stops a folder copy between files, said in its note."""
    control = control or NoControl()
    op = "copy_file"
    # Both requests pass the checks before the disk is touched at all.
    src_root.authorize(source, perm="read", op=op)
    dst_root.authorize(destination, perm="write", op=op)
    done = Copied(pay)
    with src_root.open_parent(source, op=op, perm="read") as src, open_destination(
        dst_root, destination, op
    ) as dst:
        try:
            st = src.lstat()
            if st is None:
                raise NotFound(f"no such file or directory: '{src.rel}'")
            if stat_mod.S_ISLNK(st.st_mode):
                raise IsSymlink(f"'{src.rel}' is a symbolic link; links are never copied")
            if len(dst.target_parts) > MAX_DEPTH:
                err = TooDeep(f"cannot copy '{src.rel}' to '{dst.rel}': it would lie "
                              f"{len(dst.target_parts)} levels below the root (the server "
                              f"makes paths at most {MAX_DEPTH} levels deep); nothing was copied")
                dst_root.record("DENY", dst.rel, op, err)
                raise err
            if stat_mod.S_ISDIR(st.st_mode):
                note = copy_tree.copy_folder(src_root, src, dst_root, dst, control, done)
                return CopyResult(source=src.rel, destination=dst.rel, type="dir",
                                  files=done.files, bytes=done.bytes,
                                  truncated=note.truncated, hidden=note.hidden,
                                  note=note.text)
            copy_one(dst_root, src, dst, overwrite=overwrite, control=control, done=done)
        except LoomError:
            raise
        except FileExistsError:
            raise exists_error(dst.rel) from None
        except OSError as exc:
            raise os_error(exc, dst.rel) from None
    kept = done.kept
    return CopyResult(source=src.rel, destination=dst.rel, type="file", files=done.files,
                      bytes=done.bytes, truncated=False, note=kept.note if kept else None,
                      kept_version=kept.kept if kept else None)

"""Where tools pay the byte budget (`app.budget`, docs/configuration.md#budget).

What counts: file content returned to the client (read_text_file, read_multiple_files,
read_media_file, fetch, git_show of a file, search_text's lines and their context, git_diff's
diffs, edit_file's and apply_patch's diffs) and bytes written (write_file, edit_file,
apply_patch, copy_file). The rest
(names, sizes and counts: listings, stat, search_files, search_text's files and counts,
search, git_log, a commit's list of files; index builds) is bounded by its own limits and
free.

`metered` reserves a call's bound before the work starts, from every bucket covering its
root, and settles with what the answer holds once it is made: text in bytes of UTF-8, a
media file or a write in its bytes. A paged call (a search, a diff) pays page by page, each
page reserving the output cap. A refusal comes before anything is read or written; a
call that fails gives everything back. An edit's diff is made after its write: it is paid
then, and left out of the answer (the edit says so) when the buckets cannot pay it.

fs never sees the budget, only, where a change knows its size midway (a copy, file by file;
an edit, once its new content is made), a `pay` callback the tool gives it, which takes those
bytes before the first one is written.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TypeVar

from app.budget import Reservation, text_bound
from app.errors import BudgetSpent
from app.fs.control import Pay
from app.security.resolve import Root
from app.tools.base import Call

T = TypeVar("T")


def utf8_len(text: str | None) -> int:
    return len(text.encode("utf-8", "surrogatepass")) if text else 0


def text_used(texts: Iterable[str | None]) -> int:
    return sum(utf8_len(t) for t in texts)


def text_cap(call: Call) -> int:
    """The bound of a call answering file text: its output cap, in bytes of UTF-8."""
    return text_bound(call.snapshot.limits.max_output_chars)


def metered(
    call: Call,
    root: Root,
    bound: int,
    *,
    op: str,
    rel: str,
    work: Callable[[], T],
    used: Callable[[T], int],
) -> T:
    """`work()` paid for: `bound` bytes reserved on `root` first, `used(result)` kept."""
    with call.reserve(root.name, bound, op=op, rel=rel) as paid:
        result = work()
        paid.settle(used(result))
    return result


def paid_if_it_can(call: Call, root: Root, nbytes: int) -> str | None:
    """Pay `nbytes` for good if every bucket covering `root` can, else pay nothing and answer
    why: for content that follows a change already made (an edit's diff), which the answer
    leaves out rather than refuse a call whose write is done. Not audited: nothing was denied."""
    try:
        call.snapshot.budget.charge(root.name, nbytes, call.snapshot.client)
    except BudgetSpent as exc:
        return exc.message.removesuffix("; nothing was done")
    return None


class PaidAsItGoes:
    """A call that learns its bytes midway: `pay`, handed to fs, reserves them when they
    are known (an edit's new content before it is written, a media file's size before it is
    read). Leaving the block by an exception gives them all back; `settle(used)` keeps
    `used` and gives back the rest (a file that shrank while read); a call that neither
    fails nor settles keeps what it paid."""

    def __init__(self, call: Call, root: Root, op: str) -> None:
        self.call, self.root, self.op = call, root, op
        self.held: list[Reservation] = []

    def pay(self, nbytes: int, rel: str) -> None:
        self.held.append(self.call.reserve(self.root.name, nbytes, op=self.op, rel=rel))

    def settle(self, used: int) -> None:
        for paid in self.held:
            keep = min(paid.reserved, used)
            paid.settle(keep)
            used -= keep

    def __enter__(self) -> PaidAsItGoes:
        return self

    def __exit__(self, kind: object, exc: object, tb: object) -> None:
        if kind is not None:
            for paid in self.held:
                paid.refund()


def paid_change(
    call: Call,
    root: Root,
    *,
    op: str,
    rel: str,
    dry_run: bool,
    change: Callable[[Pay | None], T],
    diff: Callable[[T], str],
    left_out: Callable[[T, str], T],
) -> T:
    """A change that answers its diff (`edit_file`, `apply_patch`), paid for: a dry run
    writes nothing, so its diff is paid as a read is, bound first; a change pays what it
    writes as it learns it (`change(pay)`), then its diff once made, or `left_out(done,
    why)` answers without it: the change is done, its answer is not refused."""
    if dry_run:
        return metered(call, root, text_cap(call), op=op, rel=rel, work=lambda: change(None),
                       used=lambda got: utf8_len(diff(got)))
    with PaidAsItGoes(call, root, op) as paid:
        done = change(paid.pay)
    spent = paid_if_it_can(call, root, utf8_len(diff(done)))
    return done if spent is None else left_out(done, spent)

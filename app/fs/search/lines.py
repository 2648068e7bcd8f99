"""Lines of a file's text: the lines holding a match, their previews, the context around them.

Shared by the matchers (`line_hits`: from "where is the next match" to "which lines match",
counting newlines only up to each match) and the searcher (`preview`, `with_context`: what a
page shows of a matching line and of the lines around it, as ripgrep prints them).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from app.fs.search.matcher import LineHit

PREVIEW_CHARS = 200


def line_hits(buf: bytes | bytearray, n: int, find: Callable[[int], int], pos: int
              ) -> Iterator[LineHit]:
    """(line number, line start, line end, match start) of each line of buf[:n] with a
    match: `pos` is the first match's start, `find(i)` the next one's at or after i (-1:
    none). Lines are counted only up to each match, and a line is reported once."""
    line = 1
    last = 0
    while pos >= 0:
        line += buf.count(b"\n", last, pos)
        start = buf.rfind(b"\n", 0, pos) + 1
        end = buf.find(b"\n", pos, n)
        if end < 0:
            end = n
        yield line, start, end, pos
        if end >= n:
            return
        line += 1  # the newline at `end`
        last = end + 1
        pos = find(last)


def preview(line: bytes, col: int) -> str:
    """The line as it is (indentation and trailing spaces kept; its `\r` line ending and a
    BOM left out), so that it can be copied into an edit; a long line is cut around the
    match, each cut end marked `...`."""
    if len(line) > PREVIEW_CHARS * 2:
        lo = max(0, col - PREVIEW_CHARS // 3)
        hi = min(len(line), lo + PREVIEW_CHARS)
        text = line[lo:hi].decode("utf-8", "replace").strip("\ufffd")
        return ("..." if lo else "") + text + ("..." if hi < len(line) else "")
    text = line.decode("utf-8", "replace")
    return text.removesuffix("\r").removeprefix("\ufeff")


def with_context(found: Iterator[LineHit], buf: bytes, n: int, context: int
                 ) -> Iterator[dict[str, object]]:
    """One item per matching line; with context, the lines around it no neighbour shows.

    As ripgrep prints them: a line is shown once, as a match if it is one, else as
    the after-context of the match above it or the before-context of the one below.
    """
    if not context:
        for line, ls, le, pos in found:
            yield {"path": "", "line": line, "preview": preview(buf[ls:le], pos - ls)}
        return
    shown = 0  # last line number already shown (a match or its after-context)
    cur = next(found, None)
    while cur is not None:
        nxt = next(found, None)
        line, ls, le, pos = cur
        before: list[str] = []
        s = ls
        for _ in range(min(context, line - 1 - shown)):
            e = s - 1
            s = buf.rfind(b"\n", 0, e) + 1
            before.append(preview(buf[s:e], 0))
        before.reverse()
        after: list[str] = []
        room = context if nxt is None else min(context, nxt[0] - line - 1)
        e = le
        for _ in range(room):
            s = e + 1
            if s >= n:
                break
            e = buf.find(b"\n", s, n)
            if e < 0:
                e = n
            after.append(preview(buf[s:e], 0))
        shown = line + len(after)
        yield {"path": "", "line": line, "preview": preview(buf[ls:le], pos - ls),
               "before": before, "after": after}
        cur = nxt

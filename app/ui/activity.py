"""The activity: the audit log's newest lines as a filterable timeline, a chart of calls
per minute, and the rows after a cursor for the page's polling (docs/owner-page.md).

Reading is bounded: of each log (the audit log, and a `--ui` process's `ui-audit.log`
when there is one) only the last `WINDOW_BYTES` are read, with one seek from the end,
the first (partial) line of the window dropped, at most `MAX_ROWS` lines kept and a line
longer than `LINE_CAP` cut. The page says which window it read. A line that does not
parse is shown as it is (escaped, its hidden characters revealed), never an error.

The cursor of the polling is `<timestamp>~<n>`: every row up to that timestamp, and the
first `n` rows of that very timestamp, have been seen. It moves forward only; a poll with
the newest cursor gets nothing.
"""

from __future__ import annotations

import re
import threading
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from app import hostfiles
from app.ui.access import context, login_needed, owner
from app.ui.context import UiContext, ui_audit_path
from app.ui.render import page, reveal

WINDOW_BYTES = 1 << 20  # of each log, the newest bytes read for the page
MAX_ROWS = 2000  # of each log, the newest lines kept
LINE_CAP = 8 << 10  # a longer line is cut
POLL_ROWS = 200  # rows one poll answers at most (the newest)
MAX_BARS = 120  # the chart's bars; a longer window gets wider bars
BAR_HEIGHT = 60  # the chart's height, in SVG units
BAR_WIDTH = 6
FILTERS = ("root", "client", "op", "outcome", "rule")
OUTCOMES = ("ALLOW", "DENY")
CUT = "…"

_LINE = re.compile(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z) (ALLOW|DENY) (\S.*)")
_CURSOR = re.compile(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z|)~(\d{1,9})")
_KEYS = {"root", "path", "op", "rule", "peer", "client"}
_NEEDED = {"root", "path", "op"}


@dataclass
class Row:
    ts: str  # "" for a line that does not parse and follows none that does
    outcome: str = ""
    root: str = ""
    path: str = ""
    op: str = ""
    rule: str = ""
    client: str = ""
    peer: str = ""
    raw: str = ""  # the line as it is, when it does not parse (or was cut)
    nth: int = 0  # its place among the rows of its timestamp

    def cursor(self) -> str:
        return f"{self.ts}~{self.nth + 1}"

    def fields(self) -> dict[str, str]:
        return {"ts": self.ts, "outcome": self.outcome, "root": self.root, "path": self.path,
                "op": self.op, "rule": self.rule, "client": self.client, "peer": self.peer,
                "raw": self.raw}


def _decode(value: str) -> str:
    """A field back from `app.audit._field` (unicode_escape); ValueError if it is not one."""
    if not value.isascii():
        raise ValueError("not an escaped field")
    return value.encode("ascii").decode("unicode_escape")


def parse(line: str) -> Row | None:
    """The row of one audit line, or None when it is not one."""
    found = _LINE.fullmatch(line)
    if found is None:
        return None
    values: dict[str, str] = {}
    for token in found.group(3).split(" "):
        key, eq, value = token.partition("=")
        if not eq or key not in _KEYS or key in values:
            return None
        try:
            values[key] = _decode(value)
        except (ValueError, UnicodeDecodeError):
            return None
    if not values.keys() >= _NEEDED:
        return None
    get = values.get
    return Row(ts=found.group(1), outcome=found.group(2), root=values["root"],
               path=values["path"], op=values["op"], rule=get("rule", ""),
               client=get("client", ""), peer=get("peer", ""))


@dataclass
class Window:
    """What was read of one log: its lines, and how many bytes of it."""
    lines: list[str] = field(default_factory=list)
    bytes_read: int = 0
    whole: bool = True  # the window began at the log's first byte


# The last window read of each log, by what the log was just before it was read: a poll
# that finds the log as it was (no line since) reads nothing (one `lstat`).
_read: dict[str, tuple[tuple[int, int, int, int], Window]] = {}
_read_lock = threading.Lock()
MAX_KEPT = 8  # logs whose last window is kept (a process reads two)


def read_window(path: str) -> Window:
    """The newest lines of the log at `path` (missing: none), bounded as the module says.
    A line still being written (no line feed yet) waits for the next read. The window is
    read again only when the log changed since the last read (size, time, or file)."""
    now = hostfiles.seen_as(path)
    if now is None:
        return Window()
    with _read_lock:
        kept = _read.get(path)
    if kept is not None and kept[0] == now:
        return kept[1]
    window = _read_window(path)
    with _read_lock:
        if len(_read) >= MAX_KEPT and path not in _read:
            _read.clear()
        _read[path] = (now, window)
    return window


def _read_window(path: str) -> Window:
    try:
        data, start = hostfiles.read_tail(path, WINDOW_BYTES)
    except FileNotFoundError:
        return Window()
    chunks = data.split(b"\n")
    chunks.pop()  # after the last line feed: nothing, or a line not yet complete
    if start > 0 and chunks:
        chunks.pop(0)  # the first line of the window began before it
    lines = []
    for chunk in chunks[-MAX_ROWS:]:
        text = chunk[:LINE_CAP].decode("utf-8", "replace")
        lines.append(text + CUT if len(chunk) > LINE_CAP else text)
    return Window(lines, len(data), start == 0)


def _rows(lines: list[str]) -> list[Row]:
    rows: list[Row] = []
    last = ""
    for line in lines:
        row = None if line.endswith(CUT) else parse(line)
        if row is None:
            row = Row(ts=last, raw=line)
        last = row.ts
        rows.append(row)
    return rows


@dataclass
class Activity:
    rows: list[Row]  # oldest first, every log merged by time
    lines: int
    kib: int
    whole: bool

    def window(self) -> str:
        logs = "the audit log" if self.whole else "the last {} KiB of the audit log"
        return f"the newest {self.lines} lines ({logs.format(self.kib)})"


def logs_of(ctx: UiContext) -> list[str]:
    audit = ctx.registry.current.config.audit_log
    return [audit, ui_audit_path(audit)]


def load(paths: list[str]) -> Activity:
    """The rows of the logs at `paths`, merged by time, each row's `nth` set."""
    rows: list[Row] = []
    lines = read = 0
    whole = True
    for path in paths:
        try:
            window = read_window(path)
        except OSError:
            continue  # not a regular file (or unreadable): not the page's to read
        rows.extend(_rows(window.lines))
        lines += len(window.lines)
        read += window.bytes_read
        whole = whole and window.whole
    rows.sort(key=lambda r: r.ts)  # stable: each log's order kept within a timestamp
    seen: Counter[str] = Counter()
    for row in rows:
        row.nth = seen[row.ts]
        seen[row.ts] += 1
    return Activity(rows, lines, (read + 1023) // 1024, whole)


def chosen(request: Request) -> dict[str, str]:
    return {k: v for k in FILTERS if (v := request.query_params.get(k, ""))}


def matches(row: Row, filters: dict[str, str]) -> bool:
    """Whether `row` is one the filters keep (a raw line: only without filters); a value
    that is not present anywhere keeps nothing."""
    if not filters:
        return True
    if row.raw:
        return False
    values = {"root": row.root, "client": row.client, "op": row.op, "outcome": row.outcome,
              "rule": row.rule}
    return all(values[k] == v for k, v in filters.items())


def choices(rows: list[Row]) -> dict[str, list[str]]:
    """For each filter, the values present in the window, sorted."""
    found: dict[str, set[str]] = {k: set() for k in FILTERS}
    for r in rows:
        if r.raw:
            continue
        for key, value in (("root", r.root), ("client", r.client), ("op", r.op),
                           ("outcome", r.outcome), ("rule", r.rule)):
            if value:
                found[key].add(value)
    return {k: sorted(v) for k, v in found.items()}


@dataclass(frozen=True)
class Bar:
    x: int
    label: str
    allow: int
    deny: int
    allow_y: int
    allow_h: int
    deny_y: int
    deny_h: int


def _minute(ts: str) -> datetime | None:
    try:
        return datetime.strptime(ts[:16], "%Y-%m-%dT%H:%M")
    except ValueError:
        return None


def chart(rows: list[Row]) -> list[Bar]:
    """Calls per minute (ALLOW and DENY apart) over the rows' span, in at most `MAX_BARS`
    bars (a longer span gets bars of several minutes); heights scaled to the tallest."""
    stamped = [(m, r.outcome) for r in rows if not r.raw and (m := _minute(r.ts))]
    if not stamped:
        return []
    first, last = stamped[0][0], stamped[-1][0]
    span = int((last - first).total_seconds() // 60) + 1
    step = -(-span // MAX_BARS)
    count = -(-span // step)
    allow, deny = [0] * count, [0] * count
    for minute, outcome in stamped:
        i = int((minute - first).total_seconds() // 60) // step
        (deny if outcome == "DENY" else allow)[i] += 1
    top = max(a + d for a, d in zip(allow, deny, strict=True))
    bars = []
    for i in range(count):
        a_h = round(allow[i] * BAR_HEIGHT / top)
        d_h = round(deny[i] * BAR_HEIGHT / top)
        at = first + timedelta(minutes=i * step)
        label = f"{at:%Y-%m-%d %H:%M} UTC" + (f" (+{step} min)" if step > 1 else "")
        bars.append(Bar(i * BAR_WIDTH, label, allow[i], deny[i],
                        BAR_HEIGHT - a_h - d_h, a_h, BAR_HEIGHT - d_h, d_h))
    return bars


def after(rows: list[Row], cursor: str) -> list[Row]:
    """The rows past `cursor` (`<ts>~<n>`; empty: every row)."""
    found = _CURSOR.fullmatch(cursor)
    if found is None:
        raise ValueError("not a cursor")
    ts, n = found.group(1), int(found.group(2))
    return [r for r in rows if r.ts > ts or (r.ts == ts and r.nth >= n)]


def newest_cursor(rows: list[Row], cursor: str = "~0") -> str:
    return rows[-1].cursor() if rows else cursor


async def activity_page(request: Request) -> Response:
    session = owner(request)
    if session is None:
        return login_needed()
    loaded = load(logs_of(context(request)))
    filters = chosen(request)
    kept = [r for r in loaded.rows if matches(r, filters)]
    bars = chart(kept)
    return page("activity.html", session=session, view="activity", window=loaded.window(),
                rows=list(reversed(kept)), filters=filters, choices=choices(loaded.rows),
                outcomes=OUTCOMES, bars=bars, bar_height=BAR_HEIGHT,
                bar_width=BAR_WIDTH, chart_width=max(1, len(bars)) * BAR_WIDTH,
                cursor=newest_cursor(loaded.rows), query=urlencode(filters))


async def activity_rows(request: Request) -> Response:
    """The rows after `?after=` that the filters keep, the newest `POLL_ROWS` of them,
    newest last, and the cursor to ask with next (past every row read, kept or not)."""
    if owner(request) is None:
        return JSONResponse({"error": "log in to the owner's page first"}, status_code=401)
    loaded = load(logs_of(context(request)))
    cursor = request.query_params.get("after", "~0")
    try:
        fresh = after(loaded.rows, cursor)
    except ValueError:
        return JSONResponse({"error": "after= is not a cursor of this page"}, status_code=400)
    filters = chosen(request)
    kept = [r for r in fresh if matches(r, filters)][-POLL_ROWS:]
    return JSONResponse({
        "rows": [{k: reveal(v) for k, v in r.fields().items()} for r in kept],
        "cursor": reveal(newest_cursor(fresh, cursor)),
        "window": loaded.window(),
    })


ROUTES = [
    Route("/activity", activity_page),
    Route("/activity/rows", activity_rows),
]

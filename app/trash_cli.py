"""`--trash ROOT` and `--restore ROOT ID [--to PATH]`: the trash for the person at the
terminal (`app.fs.change.restore` does the work; nothing here is a tool).

Paths an agent named are printed with their control characters escaped, so a file
name cannot move the cursor or rewrite the person's terminal.
"""

from __future__ import annotations

import sys
from typing import Any

from app.fs.change.inventory import Item

_ESCAPES = {c: f"\\x{c:02x}" for c in (*range(0x20), 0x7F)}


def shown(text: str) -> str:
    return text.translate(_ESCAPES)


def item_line(item: Item) -> str:
    when = item.when.strftime("%Y-%m-%dT%H:%M:%SZ")
    return f"{shown(item.id)}  {shown(item.path)}  {when}  {item.bytes}  {item.kind}"


def trash_command(loaded: Any, listed: str | None, restore: list[str] | None,
                  to: str | None) -> int:
    from app.fs.change.restore import TrashError, list_trash
    from app.fs.change.restore import restore as put_back

    err = sys.stderr
    name = listed if listed is not None else (restore or ["", ""])[0]
    roots = {r.name: r for r in loaded.roots}
    if name not in roots:
        print(f"loom-fs-mcp: unknown root '{name}'; known: {', '.join(sorted(roots))}", file=err)
        return 2
    root = roots[name]
    try:
        if restore is not None:
            where = put_back(root.real, restore[1], to)
            print(f"restored {shown(restore[1])} to {shown(where)}")
            return 0
        listing = list_trash(root.real)
    except FileNotFoundError:
        print(f"root '{name}' has no trash" + (": nothing to restore" if restore else ""))
        return 1 if restore else 0
    except TrashError as exc:
        print(f"loom-fs-mcp: {exc}", file=err)
        return 1
    except OSError as exc:
        print(f"loom-fs-mcp: the trash of root '{name}' cannot be used ({exc.strerror})",
              file=err)
        return 1
    for item in listing.items:
        print(item_line(item))
    versions = sum(i.bytes for i in listing.items if i.kind == "version")
    print(f"{len(listing.items)} item(s); versions take {versions} bytes of trash_max_bytes "
          f"{root.recovery.trash_max_bytes} (past it the oldest versions go; deletes never)")
    gone = listing.dropped
    if gone:
        print(f"{gone.get('versions')} older version(s), {gone.get('bytes')} bytes, were removed "
              f"to stay within trash_max_bytes (the last at {gone.get('last')})")
    return 0

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
    return (f"{shown(item.id)}  {shown(item.path)}  {when}  {item.bytes}  {item.kind}  "
            f"{shown(item.op)}  {shown(item.client)}")


def usage_lines(items: list[Item], recovery: Any, gone: dict[str, object]) -> list[str]:
    """What the trash really takes, beside the root's caps (versions and deletes apart)."""
    versions = [i for i in items if i.kind == "version"]
    deletes = [i for i in items if i.kind != "version"]
    taken = sum(i.disk for i in items)
    cap_bytes, cap_items = recovery.trash_max_bytes, recovery.trash_max_items
    lines = [
        f"{len(items)} item(s) take {taken} bytes on disk, of trash_max_bytes {cap_bytes} "
        f"and trash_max_items {cap_items} (past either the oldest versions go; deletes never)",
        f"versions: {len(versions)}, {sum(i.disk for i in versions)} bytes on disk; "
        f"deletes: {len(deletes)}, {sum(i.disk for i in deletes)} bytes on disk",
    ]
    if sum(i.disk for i in deletes) > cap_bytes or len(deletes) > cap_items:
        lines.append("the deletes alone are past a cap: they are never removed by trimming "
                     "(--empty-trash removes them)")
    if gone:
        lines.append(f"{gone.get('versions')} older version(s), {gone.get('bytes')} bytes on "
                     f"disk, were removed to stay within the caps (the last at "
                     f"{gone.get('last')})")
    return lines


def trash_command(loaded: Any, listed: str | None, restore: list[str] | None,
                  to: str | None) -> int:
    from app.fs.change.restore import TrashError, list_trash
    from app.fs.change.restore import restore as put_back
    from app.security.deny import DenyRules

    err = sys.stderr
    name = listed if listed is not None else (restore or ["", ""])[0]
    roots = {r.name: r for r in loaded.roots}
    if name not in roots:
        print(f"loom-fs-mcp: unknown root '{name}'; known: {', '.join(sorted(roots))}", file=err)
        return 2
    root = roots[name]
    try:
        if restore is not None:
            rules = DenyRules(extra=root.deny, allow=root.allow)
            where = put_back(root.real, restore[1], to, rules)
            print(f"restored {shown(restore[1])} to {shown(where)}")
            return 0
        listing = list_trash(root.real)
    except FileNotFoundError:
        print(f"root '{name}' has no trash" + (": nothing to restore" if restore else ""))
        return 1 if restore else 0
    except TrashError as exc:
        print(f"loom-fs-mcp: {shown(str(exc))}", file=err)  # it may quote the ID or --to
        return 1
    except OSError as exc:
        print(f"loom-fs-mcp: the trash of root '{name}' cannot be used ({exc.strerror})",
              file=err)
        return 1
    for item in listing.items:
        print(item_line(item))
    for line in usage_lines(listing.items, root.recovery, listing.dropped):
        print(line)
    return 0

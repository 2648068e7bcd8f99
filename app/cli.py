"""Command line: parse, validate the config, then serve stdio or HTTP.

stdout is the protocol on stdio: everything this module says goes to stderr,
except `--check`, whose table is the answer asked for.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import TextIO

from app import __version__
from app.errors import ConfigError


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="loom-fs-mcp",
        description="A secure, role-based filesystem MCP server (stdio or loopback HTTP).",
    )
    p.add_argument("--config", help="roots file (TOML, or JSON by its .json suffix)")
    p.add_argument("--transport", choices=("stdio", "http"), default="stdio")
    p.add_argument("--host", help="HTTP bind address (default 127.0.0.1)")
    p.add_argument("--port", type=int, help="HTTP port (default 8000)")
    p.add_argument(
        "--allow-remote",
        action="store_true",
        help="allow a non-loopback --host (also needs a token you configured)",
    )
    p.add_argument(
        "--no-auth",
        action="store_true",
        help="HTTP without a bearer token (loopback only): every local process can connect",
    )
    p.add_argument(
        "--client",
        metavar="NAME",
        help="stdio: serve the grant of this [[clients]] table (default: every root)",
    )
    p.add_argument("--ui", action="store_true",
                   help="serve the owner's page alone (for servers run over stdio), then "
                   "nothing else; port 8000 unless --port")
    p.add_argument("--ui-link", action="store_true",
                   help="print a fresh login link to the owner's page (of the server on "
                   "--port), then exit")
    p.add_argument("--check", action="store_true", help="validate the config, print roots, exit")
    p.add_argument(
        "--empty-trash", metavar="ROOT",
        help="remove the trash of root ROOT older than --older-than DAYS, then exit "
        "(for a person to run; no tool can)",
    )
    p.add_argument("--older-than", metavar="DAYS", type=float,
                   help="with --empty-trash: age of the deletes to remove (0 for all)")
    p.add_argument("--dry-run", action="store_true",
                   help="with --empty-trash: list what would be removed, remove nothing")
    p.add_argument("--trash", metavar="ROOT",
                   help="list what was deleted or replaced in root ROOT, then exit")
    p.add_argument("--restore", nargs=2, metavar=("ROOT", "ID"),
                   help="put trash item ID (from --trash) back where it was, then exit")
    p.add_argument("--to", metavar="PATH",
                   help="with --restore: where to put it, relative to the root")
    p.add_argument("--version", action="version", version=f"loom-fs-mcp {__version__}")
    return p


def roots_table(loaded, *, with_paths: bool) -> str:
    rows = [("NAME", "ROLE", "PERMISSIONS", "PATH" if with_paths else "")]
    for r in loaded.roots:
        mark = " (default)" if r.name == loaded.default_root else ""
        rows.append((r.name + mark, r.role, ",".join(r.permissions), r.real if with_paths else ""))
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    return (
        "\n".join(
            "  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row[:3])) + "  " + row[3]
            for row in rows
        ).rstrip()
        + "\n"
    )


def empty_trash_command(loaded, name: str, days: float | None, dry_run: bool) -> int:
    from datetime import timedelta

    from app.fs.change.purge import empty_trash

    err = sys.stderr
    roots = {r.name: r for r in loaded.roots}
    if name not in roots:
        print(f"loom-fs-mcp: unknown root '{name}'; known: {', '.join(sorted(roots))}", file=err)
        return 2
    if days is None or days < 0:
        print("loom-fs-mcp: --empty-trash needs --older-than DAYS (0 or more)", file=err)
        return 2
    try:
        done = empty_trash(roots[name].real, timedelta(days=days), dry_run=dry_run)
    except FileNotFoundError:
        print(f"root '{name}' has no trash: nothing to remove")
        return 0
    except OSError as exc:
        print(f"loom-fs-mcp: the trash of root '{name}' cannot be emptied ({exc.strerror})",
              file=err)
        return 1
    verb = "would remove" if dry_run else "removed"
    for stamp_dir in done.removed:
        print(f"{verb} .mcp-trash/{stamp_dir}")
    print(f"{verb} {len(done.removed)} item(s) (deletes and versions), {done.bytes} bytes; "
          f"kept {done.kept} newer")
    return 0


def config_path(arg: str | None) -> str | None:
    return arg or os.environ.get("LOOMFS_CONFIG") or None


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    path = config_path(args.config)
    err: TextIO = sys.stderr
    if path is None:
        print("loom-fs-mcp: no config: pass --config PATH or set LOOMFS_CONFIG", file=err)
        return 2
    from app import config as config_mod

    try:
        loaded = config_mod.load(path)
    except ConfigError as exc:
        print(f"loom-fs-mcp: {exc.message}", file=err)
        return 1
    if args.check:
        # The operator's own terminal: host paths are what they need to see here.
        sys.stdout.write(roots_table(loaded, with_paths=True))
        for c in loaded.clients:  # each client's grant (its token is read by the server)
            grant = ", ".join(f"{root} [{', '.join(perms)}]" for root, perms in c.grants)
            print(f"client {c.name}: {grant}")
        from app.corpus.trigram import check_lines

        for line in check_lines(loaded):
            print(line)
        return 0
    if args.empty_trash is not None:
        return empty_trash_command(loaded, args.empty_trash, args.older_than, args.dry_run)
    if args.trash is not None or args.restore is not None:
        from app.trash_cli import trash_command

        return trash_command(loaded, args.trash, args.restore, args.to)
    if args.ui_link:
        from app.startup import ui_link

        return ui_link(args, loaded)
    if args.ui:
        from app.startup import serve_ui

        return serve_ui(args, path, loaded)
    from app.startup import serve

    return serve(args, path, loaded)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

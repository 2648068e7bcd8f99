"""No read or search result, and no error, ever holds a host path.

Every read/search tool is called with good arguments and with every kind of
bad one (denied, escaping, through links, loops, FIFOs, absolute host paths
given as arguments, unknown roots, roots without read, bad globs, files too
large or binary). Each response's text and structured content is searched
for the roots' real paths, the folder next to them, the config's folder and
the pytest temp folder, spelled as given and after realpath.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from typing import Any

import pytest

from tests.fs.readkit import NEEDLE, build
from tests.kit import config_file, roots_toml
from tests.live import LiveServer, live_server

ABSOLUTE = re.compile(r"(?<![\w.])/(?:tmp|home|root|private|var|proc|etc)/")


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LiveServer, list[str]]]:
    base = tmp_path_factory.mktemp("hostpaths")
    paths = build(base)
    writer_only = base / "wo"
    writer_only.mkdir()
    (writer_only / "a.txt").write_text("x\n")
    config = config_file(base, roots_toml(
        ("main", paths["main"], "reference"), ("ws", paths["ws"], "workspace"),
        ("wo", writer_only, "sourcecode", {"permissions": ["write"]}),
        audit_log=base / "state" / "audit.log",
        extra='default_root = "main"\nmax_read_bytes = 65536',
    ))
    cfg = config.parent
    secrets = {str(p) for p in (base, *paths.values(), writer_only, cfg, config)}
    secrets |= {os.path.realpath(s) for s in secrets}
    secrets.add(str(tmp_path_factory.getbasetemp()))
    with live_server(config) as srv:
        yield srv, sorted(secrets, key=len, reverse=True)


def _calls(main: str) -> list[tuple[str, dict[str, Any]]]:
    """Each tool, with good arguments and with every kind of bad one."""
    host = f"{main}/README.md"  # an absolute host path, as a client might send it
    bad_paths = [
        "README.md", "nope", ".env", "link_secret", "link_out", "link_out/secret.txt",
        "../outside/secret.txt", "loop_a", "fifo", "src", host, main, "~/x", "C:/x",
        "a\\b", "x" * 300, "bin/blob.bin", "big/big.log", "media/fake.png", "media/huge.png",
    ]
    calls: list[tuple[str, dict[str, Any]]] = []
    for p in bad_paths:
        calls += [
            ("stat_path", {"path": p}),
            ("read_text_file", {"path": p}),
            ("read_text_file", {"path": p, "tail": 5}),
            ("read_text_file", {"path": p, "start_line": 5000, "end_line": 6000}),
            ("read_media_file", {"path": p}),
            ("list_directory", {"path": p}),
            ("list_directory", {"path": p, "recursive": True, "max_depth": 8}),
            ("search_files", {"pattern": "*", "path": p}),
            ("search_text", {"query": NEEDLE, "path": p}),
        ]
    calls += [
        ("read_multiple_files", {"paths": bad_paths}),
        ("list_directory", {"recursive": True, "max_depth": 64, "limit": 200}),
        ("search_files", {"pattern": "**", "limit": 200}),
        ("search_files", {"pattern": f"{main}/*"}),
        ("search_files", {"pattern": "../*"}),
        ("search_files", {"pattern": "[x"}),
        ("search_text", {"query": NEEDLE, "limit": 200}),
        ("search_text", {"query": main}),
        ("search_text", {"query": "x", "file_glob": host}),
        ("read_text_file", {"path": "README.md", "root": "nope"}),
        ("list_directory", {"root": "wo"}),
        ("read_text_file", {"path": "a.txt", "root": "wo"}),
        ("search_text", {"query": "x", "root": "wo"}),
        ("stat_path", {"path": "a.txt", "root": "wo"}),
        ("list_roots", {}),
    ]
    return calls


async def test_no_result_or_error_of_any_read_tool_holds_a_host_path(
    world: tuple[LiveServer, list[str]],
) -> None:
    srv, secrets = world
    main = next(s for s in secrets if s.endswith("/main"))
    errors = 0
    async with srv.session() as s:
        for tool, args in _calls(main):
            res = await s.call_tool(tool, args)
            errors += bool(res.is_error)
            texts = [getattr(c, "text", "") for c in res.content]
            texts.append(json.dumps(res.structured_content, ensure_ascii=False))
            for text in texts:
                for secret in secrets:
                    assert secret not in text, (tool, args, text[:300])
                assert not ABSOLUTE.search(text), (tool, args, text[:300])
    assert errors > 150  # the failing calls did fail: their messages were checked too


async def test_permission_refusal_names_the_root_and_rule_only(
    world: tuple[LiveServer, list[str]],
) -> None:
    srv, _ = world
    async with srv.session() as s:
        res = await s.call_tool("list_directory", {"root": "wo"})
    assert res.is_error
    assert res.content[0].text == "root 'wo' (role sourcecode) grants [write], not read"  # type: ignore[union-attr]

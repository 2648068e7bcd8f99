"""The parse worker: `python -m app.fs.code.worker LIMIT` parses files the server sends it.

Run by `app.fs.code.parse`, never imported by the server. It first lowers its own address
space to LIMIT bytes (`RLIMIT_AS`), so no file, however its brackets nest, can make a parse
take more memory than that: past it an allocation fails, and the worker ends (tree-sitter
aborts on a failed allocation) or answers `stopped: memory`; the server's process never
holds the tree. Grammars are imported on the first file of their language.

The protocol, on stdin and stdout: a request is a 4-byte big-endian length and a JSON
header `{"language", "depth"}`, then an 8-byte length and the file's bytes; the answer is a
4-byte length and JSON `{"symbols", "truncated", "errors", "stopped"}`.
"""

from __future__ import annotations

import importlib
import json
import resource
import struct
import sys
from typing import Any, BinaryIO

from app.fs.code.languages import GRAMMARS
from app.fs.code.symbols import outline_tree

_parsers: dict[str, Any] = {}


def _parser(language: str) -> Any:
    if language not in _parsers:
        import tree_sitter

        module, fn = GRAMMARS[language]
        grammar = tree_sitter.Language(getattr(importlib.import_module(module), fn)())
        _parsers[language] = tree_sitter.Parser(grammar)
    return _parsers[language]


def answer(language: str, depth: int, data: bytes) -> dict[str, Any]:
    try:
        parser = _parser(language)
    except (ImportError, AttributeError, OSError, ValueError):  # its package missing or broken
        return {"symbols": [], "truncated": False, "errors": False, "stopped": "grammar"}
    try:
        tree = parser.parse(data)
        symbols, truncated = outline_tree(language, tree.root_node, data, depth)
        return {"symbols": symbols, "truncated": truncated,
                "errors": bool(tree.root_node.has_error), "stopped": None}
    except MemoryError:
        return {"symbols": [], "truncated": False, "errors": False, "stopped": "memory"}
    except RecursionError:
        return {"symbols": [], "truncated": False, "errors": False, "stopped": "depth"}


def _exact(src: BinaryIO, n: int) -> bytes | None:
    chunks, got = [], 0
    while got < n:
        chunk = src.read(n - got)
        if not chunk:
            return None
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def serve(src: BinaryIO, dst: BinaryIO) -> None:
    while True:
        size = _exact(src, 4)
        if size is None:
            return  # the server closed the pipe: it is gone or done with us
        header = json.loads(_exact(src, struct.unpack(">I", size)[0]) or b"{}")
        length = _exact(src, 8)
        data = _exact(src, struct.unpack(">Q", length)[0]) if length else None
        if data is None:
            return
        out = json.dumps(answer(header["language"], int(header["depth"]), data)).encode()
        dst.write(struct.pack(">I", len(out)) + out)
        dst.flush()


def main() -> None:
    limit = int(sys.argv[1])
    if limit > 0:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    serve(sys.stdin.buffer, sys.stdout.buffer)


if __name__ == "__main__":
    main()

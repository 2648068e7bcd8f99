"""SecureRoot's edges, one at a time, through both engines: how many links a path may
follow, what the root itself is, the handles it hands out and what each call audits."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from app.errors import EscapesRoot
from app.security.resolve import MAX_SYMLINK_HOPS
from tests.security.conftest import make_root


def _chain(root: Path, links: int) -> str:
    """`l1` -> `l2` -> ... -> `l<links>` -> `f.txt`: opening `l1` follows `links` links."""
    (root / "f.txt").write_text("end")
    for i in range(links, 0, -1):
        nxt = "f.txt" if i == links else f"l{i + 1}"
        os.symlink(nxt, root / f"l{i}")
    return "l1"


@pytest.mark.parametrize(("links", "opens"), [(MAX_SYMLINK_HOPS, True),
                                              (MAX_SYMLINK_HOPS + 1, False)])
def test_a_path_follows_at_most_40_links(tmp_path: Path, engine: str, links: int,
                                         opens: bool) -> None:
    assert MAX_SYMLINK_HOPS == 40  # the kernel's own limit (MAXSYMLINKS)
    first = _chain(tmp_path, links)
    root = make_root(tmp_path, engine=engine)
    if opens:
        with root.open_file(first, op="read") as f:
            assert f.target == "f.txt" and os.read(f.fd, 10) == b"end"
    else:
        with pytest.raises(EscapesRoot) as exc:
            root.open_file(first, op="read")
        assert exc.value.message == "too many levels of symbolic links"

"""The choke point: every path a client sends is resolved here, and only here.

Threat model: the client (an AI agent, possibly steered by injected text) sends
arbitrary strings; other local processes may rename, swap or symlink entries
inside a root while a call runs. The guarantees: no open, create, rename or
unlink outside the root's directory handle; no denied name read, listed or
changed; no host path in anything sent back.

What this does NOT protect against: a directory that is moved *out* of the root
while a call holds a handle on it (the call then works inside the moved tree);
hard links to outside files created by someone with access to both places
(a hard link is indistinguishable from the file); secrets stored in files
whose names are not denied. The real boundary is the choice of roots.
"""

from __future__ import annotations

from app.security.deny import DenyRules, fold_name
from app.security.paths import split_request
from app.security.resolve import (
    DirHandle,
    OpenedDir,
    OpenedFile,
    Parent,
    Root,
)
from app.security.walk import WalkDir, WalkEntry, Walker, kind_of_entry

__all__ = [
    "DenyRules",
    "DirHandle",
    "OpenedDir",
    "OpenedFile",
    "Parent",
    "Root",
    "WalkDir",
    "WalkEntry",
    "Walker",
    "fold_name",
    "kind_of_entry",
    "split_request",
]

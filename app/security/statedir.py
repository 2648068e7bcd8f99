"""The server's state folder, `$XDG_STATE_HOME/loom-fs-mcp`: settled once at start, never followed.

It holds the made token, the default audit log and the search index. Threat: a
state folder that is a symbolic link lets whoever can change the link choose
where the token and the log go, and a repair through it (`chmod`) lands on the
link's target, a folder that may not be ours. So `settle`, at start and before
anything is made in it:
- resolves the links above the folder once (`XDG_STATE_HOME` is then set to the
  result, so every later use, reloads included, finds the same folder however
  the links change) and says so;
- refuses the folder itself when it is a link (its target is left as it is) or
  not a folder, or owned by another user;
- closes a folder open to other users (mode 0700) and says so: it opens the
  folder with `O_NOFOLLOW` and changes the mode of what it opened, never a name.

Not protected: a folder above the state folder that another user can write
(their link swapped there after the start is not followed, but the folder
itself is theirs to move); `XDG_STATE_HOME` pointing into a root is refused
elsewhere (`config_checks.check_token_file`).
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Callable

from app.errors import ConfigError

STATE_NAME = "loom-fs-mcp"


def state_dir() -> str:
    """`$XDG_STATE_HOME/loom-fs-mcp` (default `~/.local/state/loom-fs-mcp`): the token, the
    default audit log and the search index live here."""
    base = os.environ.get("XDG_STATE_HOME") or ""
    if not os.path.isabs(base):  # the XDG spec: a relative value is ignored
        base = os.path.expanduser("~/.local/state")
    return os.path.join(base, STATE_NAME)


def settle(path: str | None = None, show: Callable[[str], str] = str) -> list[str]:
    """Make or check the state folder (`path`, default `state_dir()`, whose links above are
    then kept resolved); what to tell the person, each line naming a folder by `show`.

    Raises ConfigError (the reason, naming the folder by `show`) when it cannot be used."""
    given = os.path.normpath(path or state_dir())
    parent = os.path.dirname(given)
    with contextlib.suppress(OSError):  # made below when missing, or said why not
        os.makedirs(parent, exist_ok=True)
    real_parent = os.path.realpath(parent)
    real = os.path.join(real_parent, os.path.basename(given))
    notes = []
    if real != given:
        notes.append(f"state folder {show(given)}: a symbolic link above it resolved once, to "
                     f"{show(real)}, for the life of this server")
        if path is None:
            os.environ["XDG_STATE_HOME"] = real_parent
    with contextlib.suppress(FileExistsError, FileNotFoundError):
        os.mkdir(real, 0o700)
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(real, flags)
    except OSError as exc:
        if exc.errno == errno.ELOOP or os.path.islink(real):
            raise ConfigError(
                f"state folder {show(given)} is a symbolic link: refusing to follow it (its "
                "target is left as it is); make it a folder, or set XDG_STATE_HOME elsewhere"
            ) from None
        if exc.errno == errno.ENOTDIR:
            raise ConfigError(f"state folder {show(given)} is not a folder") from None
        raise ConfigError(f"state folder {show(given)}: cannot be used ({exc.strerror})") from None
    try:
        st = os.fstat(fd)
        if st.st_uid != os.geteuid():
            raise ConfigError(f"state folder {show(given)} is owned by another user")
        if st.st_mode & 0o077:
            try:
                os.fchmod(fd, 0o700)
            except OSError as exc:
                raise ConfigError(f"state folder {show(given)}: open to other users and "
                                  f"cannot be closed ({exc.strerror})") from None
            notes.append(f"state folder {show(given)} had mode "
                         f"{stat.S_IMODE(st.st_mode):04o}; set to 0700")
    finally:
        os.close(fd)
    return notes

"""One exception hierarchy for every refusal the client may see.

Each class carries the public message. The tool boundary turns a `LoomError`
into an MCP tool error with exactly that text; anything else is unexpected and
is answered generically. Messages name roots and *relative* paths only, never a
host path: `os_error()` is the one place OS errors are translated, and it never
copies `filename` from the exception.
"""

from __future__ import annotations

import errno as _errno


class LoomError(Exception):
    """A refusal whose message is safe to show to the client."""

    rule = "error"
    default: str | None = None  # the message of a refusal that always says the same

    def __init__(self, message: str | None = None) -> None:
        if message is None:
            if self.default is None:
                raise TypeError(f"{type(self).__name__} needs a message")
            message = self.default
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


class ConfigError(LoomError):
    rule = "config"


class InvalidPath(LoomError):
    rule = "invalid path"

    def __init__(self, why: str) -> None:
        super().__init__(f"invalid path: {why}")


class PermissionRefused(LoomError):
    rule = "permission"


class EscapesRoot(LoomError):
    rule = "confinement"
    default = "path escapes the root"


class SymlinkLoop(EscapesRoot):
    default = "too many levels of symbolic links"


class DeniedName(LoomError):
    rule = "deny"

    def __init__(self, pattern: str) -> None:
        super().__init__(f"matches deny pattern '{pattern}'")
        self.pattern = pattern


class ServerFile(DeniedName):
    """One of the server's own files (config, token, audit log), found by identity."""

    def __init__(self) -> None:
        LoomError.__init__(
            self, "is one of the server's own files (config, token or audit log); never served"
        )
        self.pattern = "server file"


class UnknownRoot(LoomError):
    rule = "root"


class RootGone(LoomError):
    rule = "root"

    def __init__(self, name: str) -> None:
        super().__init__(
            f"root '{name}' is gone: its folder was deleted or replaced while serving; "
            "restore it (or fix the config) and reload the config"
        )


class NotFound(LoomError):
    rule = "not found"


class NotARegularFile(LoomError):
    rule = "type"
    default = "not a regular file"


class NotADirectory(LoomError):
    rule = "type"
    default = "not a directory"


class IsSymlink(LoomError):
    rule = "type"
    default = "is a symbolic link"


class TooLarge(LoomError):
    rule = "size"


class BinaryFile(LoomError):
    rule = "binary"


class AlreadyExists(LoomError):
    rule = "exists"


class FileChanged(LoomError):
    rule = "changed"
    default = "file changed since it was read"


class TooDeep(LoomError):
    """A path the server would make or move into place lies deeper than `MAX_DEPTH`."""

    rule = "depth"


class BadArgument(LoomError):
    rule = "argument"


class BudgetSpent(LoomError):
    """The byte budget cannot pay this call now (`app.budget`); nothing was done."""

    rule = "budget"


class OSRefusal(LoomError):
    rule = "os"


_OS_MESSAGES = {
    _errno.ENOENT: "no such file or directory",
    _errno.EACCES: "permission denied by the operating system",
    _errno.EPERM: "operation not permitted by the operating system",
    _errno.ENOTDIR: "not a directory",
    _errno.EISDIR: "is a directory",
    _errno.ELOOP: "too many levels of symbolic links",
    _errno.EEXIST: "already exists",
    _errno.ENOTEMPTY: "directory not empty",
    _errno.ENOSPC: "no space left on device",
    _errno.EROFS: "read-only file system",
    _errno.ENAMETOOLONG: "file name too long",
    _errno.EXDEV: "path escapes the root",
    _errno.EBUSY: "resource busy",
    _errno.EMFILE: "too many open files",
}


def os_error(exc: OSError, rel: str | None = None) -> LoomError:
    """Translate an OS error into a refusal that holds no host path."""
    code = exc.errno or 0
    text = _OS_MESSAGES.get(code) or (_errno.errorcode.get(code, "OS error").lower())
    where = f": '{rel}'" if rel else ""
    if code == _errno.ENOENT:
        return NotFound(f"{text}{where}")
    if code == _errno.ELOOP:
        return SymlinkLoop()
    if code == _errno.EXDEV:
        return EscapesRoot()
    if code == _errno.ENOTDIR:
        return NotADirectory(f"{text}{where}")
    if code == _errno.EEXIST:
        return AlreadyExists(f"{text}{where}")
    return OSRefusal(f"{text}{where}")

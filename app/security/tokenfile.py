"""The bearer token's file: made at the first HTTP start, read at start and every reload.

With no token configured (`LOOMFS_TOKEN`, `LOOMFS_TOKEN_FILE`), the HTTP
server makes one (`secrets.token_urlsafe(32)`) at `state_dir()/token`, created
0600 with `O_EXCL|O_NOFOLLOW` in a folder created 0700, and reuses it at later
starts. A made file must stay the server's: a regular file, never a link,
owned by this user and closed to everyone else; anything else is refused,
never repaired. A configured file may be a link (container secrets are) but
must be a regular file at the end of it: it is read again at every reload.

What is read is bounded (`MAX_TOKEN_BYTES`) and must be one printable ASCII
word: the token is compared with a header's bytes. Errors never name the
path: a reload's message goes to the client that asked for it.

`TokenHolder` is what the HTTP guard reads on every request: one attribute,
replaced by a reload that read a new token, so a rotation takes effect then
and the old token stops working.

With `[[clients]]` each client has its own token, from its `token_file` or made the
same way at `state_dir()/tokens/<name>` (`client_token_path`); `ClientTokens` is the
table the guard asks which client a presented token is, every token compared.
"""

from __future__ import annotations

import hmac
import os
import secrets
import stat
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from app.bounded import read_at_most
from app.errors import ConfigError
from app.security.statedir import settle, state_dir

MAX_TOKEN_BYTES = 4096
TOKEN_NAME = "token"
OWNER_SECRET = "owner-secret"
CLIENT_TOKENS = "tokens"  # the state folder's folder of the tokens made for `[[clients]]`


def default_token_path() -> str:
    return os.path.join(state_dir(), TOKEN_NAME)


def owner_secret_path() -> str:
    """The owner's page's secret (`app.ui.owner`), made and read like a made token."""
    return os.path.join(state_dir(), OWNER_SECRET)


def client_token_path(name: str) -> str:
    """Where the token made for client `name` lives: `tokens/<name>` in the state folder."""
    return os.path.join(state_dir(), CLIENT_TOKENS, name)


@dataclass(frozen=True)
class TokenFile:
    path: str
    made: bool = False  # the server's own (made at a first start): held to stricter rules


class TokenHolder:
    """The bearer token /mcp requires now (None: none is required, `--no-auth`)."""

    def __init__(self, token: str | None = None) -> None:
        self.current: bytes | None = token.encode("ascii") if token else None

    def replace(self, token: str) -> None:
        if not token:
            raise ValueError("a token holder never goes from a token to none")
        self.current = token.encode("ascii")


class ClientTokens:
    """Each client's token (`[[clients]]`): which client a presented token is, compared in
    constant time against every token, with no early exit (how long the answer takes says
    nothing of which token came close, nor of where in the table it stands)."""

    def __init__(self, tokens: Mapping[str, str]) -> None:
        self._table = tuple((name, tok.encode("ascii")) for name, tok in tokens.items())

    def __len__(self) -> int:
        return len(self._table)

    def match(self, presented: bytes) -> str | None:
        """The name of the client whose token `presented` is, or None."""
        found: str | None = None
        for name, token in self._table:
            if hmac.compare_digest(presented, token) and found is None:
                found = name
        return found


def _refuse(reason: str) -> ConfigError:
    return ConfigError(f"token file: {reason}")


def _check_private(st: os.stat_result) -> None:
    if st.st_uid != os.geteuid():
        raise _refuse("owned by another user; delete it to have a new one made")
    if st.st_mode & 0o077:
        raise _refuse(
            f"open to other users (mode {stat.S_IMODE(st.st_mode):04o}); chmod 600 it"
        )


def _read_bounded(fd: int) -> bytes:
    data = read_at_most(fd, MAX_TOKEN_BYTES)
    if data is None:
        raise _refuse(f"larger than {MAX_TOKEN_BYTES} bytes; a token is one line")
    return data


def read_token(tf: TokenFile, hold: Callable[[int], object] | None = None) -> str:
    """The token in `tf`, or ConfigError saying why not. `hold` is given the descriptor
    of the very file read (the server's own files are protected by its identity)."""
    flags = os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK | (os.O_NOFOLLOW if tf.made else 0)
    try:
        fd = os.open(tf.path, flags)
    except OSError as exc:
        raise _refuse(f"cannot be read ({exc.strerror})") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise _refuse("not a regular file (it is read again at every reload)")
        if tf.made:
            _check_private(st)
        if hold is not None:
            hold(fd)
        data = _read_bounded(fd)
    except OSError as exc:
        raise _refuse(f"cannot be read ({exc.strerror})") from None
    finally:
        os.close(fd)
    token = data.strip()
    if not token:
        raise _refuse("empty; delete it to have a new one made, or write a token in it")
    if any(b < 0x21 or b > 0x7E for b in token):
        raise _refuse("must hold one word of printable ASCII characters")
    return token.decode("ascii")


def _private_folder(path: str) -> None:
    """The start settled the state folder and said what it did (`statedir.settle`); this
    checks it again as it makes the token in it: never a link, never followed."""
    settle(path, show=lambda _: "of the token file")


def ensure_token(path: str) -> bool:
    """Make the token file at `path` unless one is there; True when it was made now.

    Raises OSError when the file cannot be made (the caller says why, with the path)."""
    _private_folder(os.path.dirname(path))
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(path, flags, 0o600)
    except FileExistsError:
        return False  # reused: read_token decides whether it may be
    try:
        os.write(fd, (secrets.token_urlsafe(32) + "\n").encode("ascii"))
        os.fsync(fd)
    finally:
        os.close(fd)
    return True

"""read_media_file: images and audio, recognised by their bytes, bounded by the budget.

The type comes from the file's signature, not its name: a `.png` that is
really text is refused, a PNG without an extension is served. The whole file
must fit in the root's `max_read_bytes` (a partial image is useless).
"""

from __future__ import annotations

import base64

from pydantic import BaseModel

from app.errors import BadArgument, TooLarge
from app.fs.control import Pay
from app.fs.hashing import sha256_bytes
from app.fs.text.textio import pread_all
from app.security.resolve import Root

SUPPORTED = "PNG, JPEG, GIF, WebP, BMP, WAV, MP3, OGG, FLAC, M4A"


class MediaInfo(BaseModel):
    path: str
    mime_type: str
    kind: str  # image | audio
    size: int
    sha256: str


def media_type(head: bytes) -> str | None:
    """The MIME type of an image or audio file, from its first bytes."""
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if head.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if head[:6] in (b"GIF87a", b"GIF89a"):
        return "image/gif"
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    if head[:4] == b"RIFF" and head[8:12] == b"WAVE":
        return "audio/wav"
    if head[:2] == b"BM" and len(head) >= 26 and head[14] in (12, 40, 52, 56, 64, 108, 124):
        return "image/bmp"
    if head.startswith(b"ID3") or (len(head) >= 2 and head[0] == 0xFF and head[1] & 0xE6 == 0xE2):
        return "audio/mpeg"
    if head.startswith(b"OggS"):
        return "audio/ogg"
    if head.startswith(b"fLaC"):
        return "audio/flac"
    if head[4:8] == b"ftyp" and head[8:12] in (b"M4A ", b"M4B "):
        return "audio/mp4"
    return None


def read_media(root: Root, path: str, pay: Pay | None = None) -> tuple[MediaInfo, str]:
    """The file's description and its bytes in base64. `pay` is the byte budget: the
    file's size, paid before it is read, and what it grew by while read, before it is
    returned (a refusal raises: nothing is returned)."""
    with root.open_file(path, op="read_media_file") as f:
        size = f.st.st_size
        budget = root.max_read_bytes
        if size > budget:
            raise TooLarge(
                f"'{f.rel}' is {size} bytes, more than the {budget} bytes one call may read "
                f"(max_read_bytes of root '{root.name}')"
            )
        if pay is not None:
            pay(size, f.rel)
        data = pread_all(f.fd, budget + 1)
        if len(data) > budget:
            raise TooLarge(f"'{f.rel}' grew past {budget} bytes while being read")
        if pay is not None and len(data) > size:
            pay(len(data) - size, f.rel)
        mime = media_type(data[:64])
        if mime is None:
            raise BadArgument(
                f"'{f.rel}' is not an image or audio file this server serves ({SUPPORTED}); "
                "read text with read_text_file"
            )
        info = MediaInfo(
            path=f.rel, mime_type=mime, kind=mime.split("/", 1)[0], size=len(data),
            sha256=sha256_bytes(data),
        )
        return info, base64.b64encode(data).decode("ascii")

"""A pack delta: its two sizes, read before anything is built, and its application.

A delta's data starts with the size of the base it applies to and the size of
its result (little-endian base-128). Both are read from its first inflated
bytes, so a chain's every base and intermediate result is checked against the
caller's limit before any of it is built. The instructions are applied by
dulwich's `apply_delta` (compiled where available), which never writes past
the result size the delta declared and refuses a copy outside the base.
"""

from __future__ import annotations

from app.fs.history.errors import CorruptObject

HEAD_BYTES = 20  # two sizes of up to 70 bits


def sizes(head: bytes, sha: bytes) -> tuple[int, int, int]:
    """(base size, result size, bytes they took) from the start of a delta's data."""
    pos = 0
    out = []
    for _ in range(2):
        size = shift = 0
        while True:
            if pos >= len(head) or shift > 63:
                raise CorruptObject(sha, "a delta's header is damaged")
            byte = head[pos]
            pos += 1
            size |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                break
        out.append(size)
    return out[0], out[1], pos


def apply(base: bytes, data: bytes, result_size: int, sha: bytes) -> bytes:
    """The delta `data` applied to `base`; its declared sizes were checked by the caller."""
    # Imported here: dulwich costs start-up 10-70 ms, and only a packed object's delta needs it.
    from dulwich.errors import ApplyDeltaError
    from dulwich.pack import apply_delta

    try:
        out = apply_delta(base, data)
    except (ApplyDeltaError, ValueError, IndexError) as exc:
        raise CorruptObject(sha, f"a delta does not apply ({type(exc).__name__})") from None
    built = out if isinstance(out, bytes) else b"".join(out)
    if len(built) != result_size:
        raise CorruptObject(sha, "a delta's result is not the size it declares")
    return built

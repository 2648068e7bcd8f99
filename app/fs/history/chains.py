"""A packed object rebuilt from its delta chain, every step checked before it is built.

A packed object may be a delta against a base that is itself a delta, and so
on. The chain is first walked by headers alone (no data read): a link seen
twice (a delta that is its own base, or a cycle through reference deltas) is
corrupt, a chain deeper than `MAX_DEPTH` is refused. The base's size, from
its header, is checked before it is inflated. Then each delta, oldest first,
is inflated (its data at most twice the base limit) and the sizes it declares
are checked before its result is built: its base must be the size it expects,
no intermediate result may pass the read's base limit (`limits`), the result
may not pass the read's own limit, and the chain's total (results and delta
data) may not pass `CHAIN_WORK`. The result's id is checked against its
content. Results small enough are kept in the store's base cache, so reading
the next version of the same file does not rebuild the chain.
"""

from __future__ import annotations

from typing import Protocol

from app.fs.history import delta
from app.fs.history.errors import CorruptObject, Meter, ObjectTooLarge, short
from app.fs.history.packs import EntryHead, Pack
from app.fs.history.raw import MIB, NAMES, Raw, Want, check_id, take, too_large

MAX_DEPTH = 4095  # the deepest chain git writes (`pack.depth` is capped there)
CHAIN_WORK = 256 * MIB  # bytes one chain may build and inflate
MAX_BASE = 16 * MIB  # no base or intermediate result above this, unless the read allows more

Link = tuple[Pack, int, EntryHead]


class Store(Protocol):
    """What a chain needs of the call's object store (`store.RootObjectStore`, which
    imports this module): its meter, its packs, loose bases and the base cache."""

    meter: Meter

    def locate(self, sha: bytes) -> tuple[Pack, int] | None: ...

    def loose_base(self, sha: bytes, of: bytes) -> tuple[int, bytes] | None: ...

    def cached_base(self, key: tuple[int, int]) -> tuple[int, bytes] | None: ...

    def keep_base(self, key: tuple[int, int], kind: int, data: bytes) -> None: ...


def limits(want: Want) -> tuple[int, int]:
    """(largest result built whole, largest base or intermediate) for a read."""
    built = min(want.limit, max(want.cap, MAX_BASE))
    return built, max(built, MAX_BASE)


def walk(store: Store, pack: Pack, offset: int, sha: bytes
         ) -> tuple[list[Link], tuple[int, bytes] | None]:
    """The chain's links by headers alone, target first, and the base when it is not a
    pack entry of the chain (cached, or loose)."""
    links: list[Link] = []
    seen: set[tuple[int, int]] = set()
    while True:
        key = (id(pack), offset)
        if key in seen:
            raise CorruptObject(sha, "its delta chain refers back to itself")
        if len(links) > MAX_DEPTH:
            raise ObjectTooLarge(
                f"object {short(sha)} is stored as a chain of more than {MAX_DEPTH} deltas")
        seen.add(key)
        if links:
            cached = store.cached_base(key)
            if cached is not None:
                return links, cached
        head = pack.head(offset, sha)
        links.append((pack, offset, head))
        if head.base_at is not None:
            offset = head.base_at
        elif head.base_id is not None:
            found = store.locate(head.base_id)
            if found is None:
                base = store.loose_base(head.base_id, sha)
                if base is None:
                    raise CorruptObject(sha, f"its delta base {short(head.base_id)} is missing")
                return links, base
            pack, offset = found
        else:
            return links, None


def read(store: Store, pack: Pack, offset: int, sha: bytes, want: Want) -> Raw:
    links, base = walk(store, pack, offset, sha)
    if base is None and len(links) == 1:  # not a delta
        head = links[0][2]
        return take(pack.stream(head, sha, store.meter), head.kind, head.size, sha, want)
    built, bases = limits(want)
    deltas = links if base is not None else links[:-1]
    if base is None:
        p, _, head = links[-1]
        if head.size > bases:
            raise _base_too_large(sha, head.size, bases)
        whole = take(p.stream(head, sha, store.meter), head.kind, head.size, sha,
                     Want(cap=head.size, limit=bases, verify=False), is_sha=False)
        base = (whole.kind, whole.data)
    kind, data = base
    work = len(data)
    for i, (p, off, head) in enumerate(reversed(deltas)):
        last = i == len(deltas) - 1
        if head.size > 2 * bases:
            raise _base_too_large(sha, head.size, bases)
        body = p.stream(head, sha, store.meter).read(head.size + 1)
        if len(body) != head.size:
            raise CorruptObject(sha, "a delta's data is not the size its header says")
        size = _check_step(body, len(data), sha, kind, built if last else bases,
                           want.limit if last else None)
        work += size + head.size
        if work > CHAIN_WORK:
            raise ObjectTooLarge(
                f"{NAMES[kind]} {short(sha)} is stored as a chain of deltas that would build "
                f"more than {CHAIN_WORK >> 20} MiB")
        data = delta.apply(data, body, size, sha)  # only now is the result built
        store.meter.spend(size)
        store.keep_base((id(p), off), kind, data)
    check_id(sha, kind, data)
    cut = data[: want.cap]
    return Raw(kind, cut, len(data), len(cut) == len(data))


def _check_step(body: bytes, base_size: int, sha: bytes, kind: int, most: int,
                limit: int | None) -> int:
    """The result size a delta declares, checked against its base and the limits."""
    src, dst, _ = delta.sizes(body[: delta.HEAD_BYTES], sha)
    if src != base_size:
        raise CorruptObject(sha, "a delta does not fit the base it names")
    if limit is not None and dst > limit:
        raise too_large(sha, kind, dst, limit)
    if dst > most:
        raise ObjectTooLarge(
            f"{NAMES[kind]} {short(sha)} is stored as a change of {dst} bytes, above {most}, "
            "the most built from deltas for this read")
    return dst


def _base_too_large(sha: bytes, size: int, bases: int) -> ObjectTooLarge:
    return ObjectTooLarge(
        f"object {short(sha)} is stored as a change to an object of {size} bytes, above "
        f"{bases}, the most built from deltas")


def kind_and_size(store: Store, pack: Pack, offset: int, sha: bytes
                  ) -> tuple[int, int]:
    """An object's kind (its chain's base's) and size (its own header, or its delta's
    declared result), from headers and a few inflated bytes."""
    links, base = walk(store, pack, offset, sha)
    kind = base[0] if base is not None else links[-1][2].kind
    p, _, head = links[0]
    if len(links) == 1 and base is None:
        return kind, head.size
    _, dst, _ = delta.sizes(p.stream(head, sha, store.meter).read(delta.HEAD_BYTES), sha)
    return kind, dst

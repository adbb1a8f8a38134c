"""The release check and completeness (§7.9, §7.10): access is judged again now; items of
collections no longer readable are dropped, their ids scrubbed from everything else the pack
says, then ``missing``, ``complete``, the item hashes and the Merkle root are settled."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

import msgspec

from context_service.domain.pack.items import Item, Missing, Omitted, Pack
from context_service.domain.pack.receipt import item_digest, merkle_root
from context_service.domain.pack.request import AsOf, PackRequest, split_document_id


class Skipped(NamedTuple):
    """An item skipped for budget: what ``omitted`` and the release check read of it."""

    id: str
    concerns: frozenset[str]


@dataclass(frozen=True, slots=True)
class Packed:
    """Packing's outcome before the release check."""

    items: list[Item]  # pack order
    skipped: list[Skipped]  # skipped for budget, in order
    duplicates: list[str]  # absorbed record references, in order
    served: dict[str, list[str]]  # requirement id -> ids of the packed items serving it
    unmet: dict[str, str]  # requirement id -> reason, for requirements nothing was packed for
    requirement_order: list[str]  # set order


def _memo(readable_now: Callable[[str], bool]) -> Callable[[str], bool]:
    known: dict[str, bool] = {}

    def readable(collection: str) -> bool:
        found = known.get(collection)
        if found is None:
            found = known[collection] = readable_now(collection)
        return found
    return readable


def release(request: PackRequest, as_of: AsOf, packed: Packed, head: list[Missing],
            tail: list[Missing], readable_now: Callable[[str], bool],
            read: frozenset[str] | None = None) -> Pack:
    """The released pack. ``head`` holds the ``collection`` and ``document`` entries of
    ``missing``, ``tail`` the ``context_set`` and ``deadline`` entries (§7.10 order).

    ``read``: the collections the pack read (None: every one). A requested document of a
    collection the pack never read was reported because its collection or the caller's access
    is missing (§7.4): the caller's own id, it stays, so a hidden collection and an absent one
    answer alike; one of a collection read but no longer readable now is scrubbed (§7.9)."""
    readable = _memo(readable_now)

    def reported(m: Missing) -> bool:
        if m.kind == "collection":
            return readable(m.collection_id)
        if m.kind == "document":
            collection = split_document_id(m.document_id)[0]
            return (read is not None and collection not in read) or readable(collection)
        return True

    def ref_ok(ref: str) -> bool:
        return readable(ref.partition("/")[0])

    def item_ok(item: Item | Skipped) -> bool:
        return all(readable(c) for c in item.concerns)

    kept: list[Item] = []
    for item in packed.items:
        if item_ok(item):
            kept.append(scrubbed(item, ref_ok))
    released = {i.id for i in kept}
    missing = [m for m in head if reported(m)]
    for rid in packed.requirement_order:
        if rid in packed.unmet:
            missing.append(Missing(kind="required_evidence", id=rid, reason=packed.unmet[rid]))
        elif not any(i in released for i in packed.served[rid]):
            missing.append(Missing(kind="required_evidence", id=rid, reason="not_found"))
    missing.extend(tail)
    omitted = Omitted(
        budget_count=len(packed.skipped),
        budget_ids=tuple(i.id for i in packed.skipped if item_ok(i)),
        duplicate_count=len(packed.duplicates),
        duplicate_ids=tuple(f"psg:{r}" for r in packed.duplicates if ref_ok(r)),
        access_count=len(packed.items) - len(kept))
    digests = [item_digest(i) for i in kept]
    hashed = tuple(msgspec.structs.replace(i, hash="sha256:" + d.hex())
                   for i, d in zip(kept, digests, strict=True))
    return Pack(task=request.task, as_of=as_of, max_tokens=request.max_tokens,
                coverage=request.coverage, used_tokens=sum(i.tokens for i in hashed),
                complete=not missing, items=hashed, omitted=omitted, missing=tuple(missing),
                merkle_root=merkle_root(digests))


def scrubbed(item: Item, ref_ok: Callable[[str], bool]) -> Item:
    """The item without references to collections not readable now (flags keep their value)."""
    absorbed = tuple(i for i in item.absorbed if ref_ok(i.removeprefix("psg:")))
    flags = item.flags
    if flags is not None:
        flags = msgspec.structs.replace(
            flags, superseded_by=tuple(r for r in flags.superseded_by if ref_ok(r)),
            contradicts=tuple(r for r in flags.contradicts if ref_ok(r)))
    if absorbed == item.absorbed and flags == item.flags:
        return item
    return msgspec.structs.replace(item, absorbed=absorbed, flags=flags)

"""The receipt of a pack (§7.12): item hashes over their reduced compact JSON, and the RFC 6962
Merkle Tree Hash over the items' digests in pack order."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

import msgspec

from context_service.domain.pack.items import Flags, Item, Source
from context_service.domain.values import format_timestamp

ZERO_DIGEST = bytes(32)  # an unavailable item in a replay's current root (§8.1)


def source_json(source: Source, *, with_revision: bool = True) -> dict[str, Any]:
    """The Source object of §7.11 (only the keys its kind has), optionally without
    ``revision`` and ``contextSetVersion`` (the hashed form)."""
    out: dict[str, Any] = {"kind": source.kind}
    if source.collection_id:
        out["collectionId"] = source.collection_id
    if source.document_id:
        out["documentId"] = source.document_id
    if source.record_id:
        out["recordId"] = source.record_id
    if source.revision and with_revision:
        out["revision"] = source.revision
    if source.kind == "context_set":
        out["contextSetId"] = source.context_set_id
        if with_revision:
            out["contextSetVersion"] = source.context_set_version
    return out


def flags_json(flags: Flags, out: dict[str, Any]) -> None:
    """Add ``validity``, ``superseded``, ``supersededBy``, ``contradiction``, ``contradicts``."""
    validity: dict[str, Any] = {}
    if flags.validity.valid_from is not None:
        validity["validFrom"] = format_timestamp(flags.validity.valid_from)
    if flags.validity.valid_to is not None:
        validity["validTo"] = format_timestamp(flags.validity.valid_to)
    validity["status"] = flags.validity.status
    out["validity"] = validity
    out["superseded"] = flags.superseded
    if flags.superseded_by:
        out["supersededBy"] = list(flags.superseded_by)
    out["contradiction"] = flags.contradiction
    if flags.contradicts:
        out["contradicts"] = list(flags.contradicts)


def item_digest(item: Item) -> bytes:
    """SHA-256 over the compact JSON of the item reduced to its identity, text and flags."""
    reduced: dict[str, Any] = {"id": item.id, "trust": item.trust, "text": item.text,
                               "source": source_json(item.source, with_revision=False)}
    if item.flags is not None:
        flags_json(item.flags, reduced)
    return hashlib.sha256(msgspec.json.encode(reduced)).digest()


def item_hash(item: Item) -> str:
    """``sha256:`` + the hex item digest."""
    return "sha256:" + item_digest(item).hex()


def merkle_tree_hash(digests: Sequence[bytes]) -> bytes:
    """RFC 6962 §2.1 MTH over the leaves ``digests`` (each hashed as a leaf: 0x00 ‖ d)."""
    n = len(digests)
    if n == 0:
        return hashlib.sha256(b"").digest()
    if n == 1:
        return hashlib.sha256(b"\x00" + digests[0]).digest()
    k = 1
    while k * 2 < n:
        k *= 2
    return hashlib.sha256(b"\x01" + merkle_tree_hash(digests[:k])
                          + merkle_tree_hash(digests[k:])).digest()


def merkle_root(digests: Sequence[bytes]) -> str:
    """``sha256:`` + the hex Merkle Tree Hash."""
    return "sha256:" + merkle_tree_hash(digests).hex()


def digest_of(hash_text: str) -> bytes:
    """The 32 bytes of a ``sha256:<hex>`` hash."""
    return bytes.fromhex(hash_text.removeprefix("sha256:"))

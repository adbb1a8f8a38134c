"""The bytes of a pack (§7.12, §7.14): the compact JSON body in the documented key order, the
pack digest and ids, and the ndjson lines of the stream, all from one ``Pack``."""

from __future__ import annotations

import hashlib
from datetime import datetime
from typing import Any

import msgspec

from context_service.domain.pack.items import Item, Missing, Omitted, Pack
from context_service.domain.pack.receipt import flags_json, source_json
from context_service.domain.pack.request import as_of_json
from context_service.domain.score import format_score
from context_service.domain.values import format_timestamp

Json = dict[str, Any]


def score_json(micros: int) -> msgspec.Raw:
    """A score as the plain decimal of §1.8."""
    return msgspec.Raw(format_score(micros).encode())


def item_json(item: Item) -> Json:
    """An Item of §7.11, keys in order."""
    out: Json = {"id": item.id, "class": item.cls, "trust": item.trust, "text": item.text,
                 "tokens": item.tokens, "score": score_json(item.score),
                 "source": source_json(item.source)}
    if item.requirement_ids:
        out["requirementIds"] = list(item.requirement_ids)
    if item.flags is not None:
        flags_json(item.flags, out)
    if item.absorbed:
        out["absorbed"] = list(item.absorbed)
    out["hash"] = item.hash
    return out


def missing_json(entry: Missing) -> Json:
    """``{"kind", <identity>, "reason"}`` (§7.10)."""
    out: Json = {"kind": entry.kind}
    if entry.kind == "collection":
        out["collectionId"] = entry.collection_id
    elif entry.kind == "document":
        out["documentId"] = entry.document_id
    elif entry.kind in ("required_evidence", "context_set"):
        out["id"] = entry.id
    out["reason"] = entry.reason
    return out


def omitted_json(omitted: Omitted) -> Json:
    return {"budget": {"count": omitted.budget_count, "ids": list(omitted.budget_ids)},
            "duplicate": {"count": omitted.duplicate_count,
                          "ids": list(omitted.duplicate_ids)},
            "access": {"count": omitted.access_count}}


def receipt_json(pack: Pack) -> Json:
    return {"algorithm": "sha256", "merkleRoot": pack.merkle_root,
            "position": pack.as_of.position}


def budget_json(pack: Pack) -> Json:
    return {"maxTokens": pack.max_tokens, "usedTokens": pack.used_tokens,
            "coverage": pack.coverage}


def _digested(pack: Pack) -> Json:
    return {"task": pack.task, "asOf": as_of_json(pack.as_of), "budget": budget_json(pack),
            "complete": pack.complete, "items": [item_json(i) for i in pack.items],
            "omitted": omitted_json(pack.omitted),
            "missing": [missing_json(m) for m in pack.missing], "receipt": receipt_json(pack)}


def pack_digest(pack: Pack) -> str:
    """Hex SHA-256 over the compact JSON of the digested keys, exactly as in the body."""
    return hashlib.sha256(msgspec.json.encode(_digested(pack))).hexdigest()


def pack_id(digest: str) -> str:
    """``pk_`` + the first 32 hex characters of the pack digest."""
    return "pk_" + digest[:32]


def replay_id(credential_id: str, canonical: bytes, digest: str) -> str:
    """``rp_`` + 32 hex of SHA-256 over ``<credential id> LF <canonical> LF <digest hex>``."""
    payload = credential_id.encode() + b"\n" + canonical + b"\n" + digest.encode()
    return "rp_" + hashlib.sha256(payload).hexdigest()[:32]


def pack_body(pack: Pack, replay: str | None = None,
              expires_at: datetime | None = None) -> Json:
    """The response object of §7.12. Without ``replay`` and ``expires_at`` it is the ``pack``
    of a recompute answer (§8.2): the same keys without ``replayId`` and ``expiresAt``."""
    digested = _digested(pack)
    out: Json = {"packId": pack_id(pack_digest(pack))}
    if replay is not None:
        out["replayId"] = replay
    out.update(digested)
    if expires_at is not None:
        out["expiresAt"] = format_timestamp(expires_at)
    return out


def render(pack: Pack, replay: str, expires_at: datetime) -> bytes:
    """The exact compact JSON body of ``POST /api/agent/v1/context-packs``."""
    return msgspec.json.encode(pack_body(pack, replay, expires_at))


def stream_lines(pack: Pack, replay: str, expires_at: datetime) -> list[bytes]:
    """The ndjson lines of ``/context-packs/stream`` (§7.14), each ending in LF: header, one
    line per item in pack order, footer."""
    header = {"type": "header", "packId": pack_id(pack_digest(pack)), "replayId": replay,
              "asOf": as_of_json(pack.as_of),
              "budget": {"maxTokens": pack.max_tokens, "coverage": pack.coverage}}
    lines = [msgspec.json.encode(header)]
    lines.extend(msgspec.json.encode({"type": "item", "item": item_json(i)})
                 for i in pack.items)
    footer = {"type": "footer", "usedTokens": pack.used_tokens, "complete": pack.complete,
              "omitted": omitted_json(pack.omitted),
              "missing": [missing_json(m) for m in pack.missing],
              "receipt": receipt_json(pack), "expiresAt": format_timestamp(expires_at)}
    lines.append(msgspec.json.encode(footer))
    return [line + b"\n" for line in lines]


def stream_error_line(message: str) -> bytes:
    """The last line of a stream that failed after its header (§7.14)."""
    return msgspec.json.encode({"type": "error", "code": "INTERNAL_ERROR",
                                "message": message}) + b"\n"

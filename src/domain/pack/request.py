"""The resolved pack request (§7.1, defaults filled in) and its canonical form (§7.12), the
content that, with the credential and the pack digest, names a replay."""

from __future__ import annotations

import hashlib
from datetime import datetime

import msgspec

from context_service.domain.pack.model import ENGINE_VERSION, SOURCES
from context_service.domain.values import format_timestamp

DEFAULT_MAX_TOKENS = 4000
DEFAULT_MAX_LATENCY_MS = 15000
BEST_EFFORT, REQUIRE_COMPLETE = "best_effort", "require_complete"
HYBRID, LEXICAL = "hybrid", "lexical"


class AsOf(msgspec.Struct, frozen=True, kw_only=True):
    """The resolved ``asOf`` of a pack (§7.3): valid time T, system time and position P."""

    valid_time: datetime
    system_time: datetime
    position: int


class PackRequest(msgspec.Struct, frozen=True, kw_only=True):
    """A pack request after the field rules, with the defaults of §7.1 applied.

    ``collection_ids`` and ``document_ids`` keep the request's order and duplicates (an empty
    tuple means the filter is absent: every collection or document). ``sources`` holds the
    distinct requested kinds; ``context_set_id`` is the active set (§3.5), ``""`` for none."""

    task: str
    max_tokens: int = DEFAULT_MAX_TOKENS
    max_latency_ms: int = DEFAULT_MAX_LATENCY_MS
    coverage: str = BEST_EFFORT
    collection_ids: tuple[str, ...] = ()
    document_ids: tuple[str, ...] = ()
    sources: tuple[str, ...] = SOURCES
    retrieval: str = HYBRID
    context_set_id: str = ""

    def wants(self, source: str) -> bool:
        """Whether ``source`` (``passages``, ``graph`` or ``documents``) was requested."""
        return source in self.sources


def task_sha256(task: str) -> str:
    """Hex SHA-256 of the task's UTF-8 bytes."""
    return hashlib.sha256(task.encode()).hexdigest()


def ordered_sources(sources: tuple[str, ...]) -> list[str]:
    """The distinct requested sources in the order ``passages``, ``graph``, ``documents``."""
    return [s for s in SOURCES if s in sources]


def canonical_request(request: PackRequest, as_of: AsOf, set_version: int) -> bytes:
    """The compact JSON canonical request of §7.12 (key order fixed, defaults filled in).

    ``set_version`` is the active set's version in force at P (0 for none, or when it had none
    at P)."""
    body = {
        "taskSha256": task_sha256(request.task),
        "budget": {"maxTokens": request.max_tokens, "maxLatencyMs": request.max_latency_ms,
                   "coverage": request.coverage},
        "asOf": as_of_json(as_of),
        "filters": {"collectionIds": sorted(set(request.collection_ids)),
                    "documentIds": sorted(set(request.document_ids)),
                    "sources": ordered_sources(request.sources)},
        "retrieval": request.retrieval,
        "contextSetId": request.context_set_id,
        "contextSetVersion": set_version if request.context_set_id else 0,
        "engineVersion": ENGINE_VERSION,
    }
    return msgspec.json.encode(body)


def as_of_json(as_of: AsOf) -> dict[str, object]:
    """``{"validTime","systemTime","position"}``."""
    return {"validTime": format_timestamp(as_of.valid_time),
            "systemTime": format_timestamp(as_of.system_time), "position": as_of.position}


def split_document_id(document_id: str) -> tuple[str, str]:
    """A requested ``documentId`` split at its first ``/``: (collection, rest) (§5.2)."""
    collection, _, rest = document_id.partition("/")
    return collection, rest

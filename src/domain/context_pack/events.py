"""Facts about a released pack and its replays (spec §12.2): hashes and identities only, never
the task text or an item's text. Field names and order are the spec's."""

from __future__ import annotations

from datetime import datetime

import msgspec

from context_service.domain.events import Event


class PackParameters(msgspec.Struct, frozen=True, kw_only=True):
    """The canonical parameters of the request, defaults filled in (spec §7.12)."""

    max_tokens: int
    max_latency_ms: int
    coverage: str
    collection_ids: tuple[str, ...]  # distinct, sorted
    document_ids: tuple[str, ...]  # distinct, sorted
    sources: tuple[str, ...]  # in the order passages, graph, documents
    retrieval: str
    context_set_id: str  # "" for none
    context_set_version: int  # 0 for none, or no version in force at P


class ItemSource(msgspec.Struct, frozen=True, kw_only=True):
    """Where an item came from; absent identities are ``""`` (0 for the set version)."""

    kind: str
    collection_id: str = ""
    document_id: str = ""
    record_id: str = ""
    revision: str = ""
    context_set_id: str = ""
    context_set_version: int = 0


class ReleasedItem(msgspec.Struct, frozen=True, kw_only=True):
    id: str
    class_: str = msgspec.field(name="class")
    hash: str
    source: ItemSource


class MissingEntry(msgspec.Struct, frozen=True, kw_only=True):
    kind: str
    id: str = ""
    collection_id: str = ""
    document_id: str = ""
    reason: str


class ContextPackReleased(Event, frozen=True, tag="ContextPackReleased"):
    """A pack was released: the first (and only) release of its replay id."""

    replay_id: str
    pack_id: str
    credential_id: str
    created_by: str
    task_sha256: str
    parameters: PackParameters
    valid_time: datetime
    system_time: datetime
    position: int
    engine_version: str
    items: tuple[ReleasedItem, ...]
    merkle_root: str
    complete: bool
    missing: tuple[MissingEntry, ...]
    used_tokens: int
    expires_at: datetime


class ContextPackReplayed(Event, frozen=True, tag="ContextPackReplayed"):
    """One replay run (``verify`` or ``recompute``) and its outcome, as counts."""

    replay_id: str
    mode: str
    credential_id: str
    created_by: str
    position: int
    engine_version: str
    unchanged: int
    changed: int
    unavailable: int
    added: int
    removed: int
    merkle_root: str  # the recomputed root


CONTEXT_PACK_EVENTS: tuple[type[Event], ...] = (ContextPackReleased, ContextPackReplayed)

"""What a pack is made of (§7.7, §7.10-§7.12): items with their source, validity and flags, the
missing entries, and the assembled pack before it is rendered."""

from __future__ import annotations

from datetime import datetime

import msgspec

from context_service.domain.pack.request import AsOf

# item classes, in packing order (§7.8)
VERIFIED_ANSWERS, DEFINITIONS, INSTRUCTIONS = "verified_answers", "definitions", "instructions"
REQUIRED_EVIDENCE, EVIDENCE, WHOLE_DOCUMENT = "required_evidence", "evidence", "whole_document"
APPROVED, UNTRUSTED = "approved", "untrusted"
FRAMING_TOKENS = 16  # §7.6: an item's cost is its text's token count plus this


class Source(msgspec.Struct, frozen=True, kw_only=True):
    """Where an item comes from (§7.11); ``""`` / ``0`` for the keys its kind leaves out."""

    kind: str  # passage | document | graph | context_set
    collection_id: str = ""
    document_id: str = ""
    record_id: str = ""
    revision: str = ""
    context_set_id: str = ""
    context_set_version: int = 0


class Validity(msgspec.Struct, frozen=True, kw_only=True):
    status: str  # valid | unknown | not_yet_valid | expired
    valid_from: datetime | None = None
    valid_to: datetime | None = None


class Flags(msgspec.Struct, frozen=True, kw_only=True):
    """The validity and flags an untrusted item carries (§7.11)."""

    validity: Validity
    superseded: bool = False
    superseded_by: tuple[str, ...] = ()  # record references, sorted
    contradiction: bool = False
    contradicts: tuple[str, ...] = ()  # record references, sorted


UNKNOWN_FLAGS = Flags(validity=Validity(status="unknown"))


class Item(msgspec.Struct, frozen=True, kw_only=True):
    """One pack item. ``flags`` is None exactly for approved (context-set) items. ``score`` is in
    millionths (§1.8). ``concerns`` are the collections the release check reads (§7.9)."""

    id: str
    cls: str
    trust: str
    text: str
    tokens: int  # cost: text tokens + FRAMING_TOKENS
    score: int
    source: Source
    flags: Flags | None = None
    requirement_ids: tuple[str, ...] = ()
    absorbed: tuple[str, ...] = ()
    concerns: frozenset[str] = frozenset()
    hash: str = ""  # "sha256:<hex>", set on release (§7.12)


class Missing(msgspec.Struct, frozen=True, kw_only=True):
    """One entry of ``missing`` (§7.10); the identity key depends on ``kind``."""

    kind: str  # collection | document | required_evidence | context_set | deadline
    reason: str
    id: str = ""  # required_evidence, context_set
    collection_id: str = ""  # collection
    document_id: str = ""  # document


class Omitted(msgspec.Struct, frozen=True, kw_only=True):
    """``omitted`` (§7.12): counts keep counting ids the release check scrubbed."""

    budget_count: int = 0
    budget_ids: tuple[str, ...] = ()
    duplicate_count: int = 0
    duplicate_ids: tuple[str, ...] = ()
    access_count: int = 0


class Pack(msgspec.Struct, frozen=True, kw_only=True):
    """A released (or refused, when incomplete under ``require_complete``) pack."""

    task: str
    as_of: AsOf
    max_tokens: int
    coverage: str
    used_tokens: int
    complete: bool
    items: tuple[Item, ...]
    omitted: Omitted
    missing: tuple[Missing, ...]
    merkle_root: str  # "sha256:<hex>"

    @property
    def refused(self) -> bool:
        """``require_complete`` and incomplete: answer 422 with ``missing``, record nothing."""
        return self.coverage == "require_complete" and not self.complete

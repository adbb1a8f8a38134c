"""Replays of a recorded pack (§8): rebuild each recorded item from the current state and
compare hashes (``verify``), and the diff of a recomputed pack against the record
(``recompute``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime

import msgspec

from context_service.domain.context_set.state import ContextSetState
from context_service.domain.pack.items import Item, Pack, Source
from context_service.domain.pack.model import Corpus, NamespaceAt
from context_service.domain.pack.scope import Readable

UNCHANGED, CHANGED, UNAVAILABLE = "unchanged", "changed", "unavailable"


class RecordedItem(msgspec.Struct, frozen=True, kw_only=True):
    """One item of a ``ContextPackReleased`` event: identities and hash only."""

    id: str
    cls: str
    hash: str
    source: Source


class CurrentState(msgspec.Struct, frozen=True, kw_only=True):
    """What a replay rebuilds items from: the namespace folded to the latest pack-input event,
    the usable indexes of the collections the recorded items name, the sets' current states by
    id, the recorded valid time, the caller's access now and the caller's bound set (``""``)."""

    ns: NamespaceAt
    corpus: Corpus
    sets: Mapping[str, ContextSetState]
    valid_time: datetime
    readable_now: Readable
    bound_set: str = ""


class ItemCheck(msgspec.Struct, frozen=True, kw_only=True):
    id: str
    status: str
    recorded_hash: str
    current_hash: str = ""  # "" when unavailable


class Verification(msgspec.Struct, frozen=True, kw_only=True):
    items: tuple[ItemCheck, ...]
    unchanged: int
    changed: int
    unavailable: int
    merkle_root: str  # recorded
    current_merkle_root: str
    matches: bool


class Diff(msgspec.Struct, frozen=True, kw_only=True):
    added: tuple[str, ...]
    removed: tuple[str, ...]
    changed: tuple[str, ...]
    unchanged: int


def rebuild_item(recorded: RecordedItem, state: CurrentState) -> Item | None:
    """The recorded item as §7.7 and §7.11 would build it now (hash set), or None when its
    source is gone or not readable by the caller (§8.1 ``unavailable``)."""
    raise NotImplementedError


def verify(recorded: Sequence[RecordedItem], recorded_root: str,
           state: CurrentState) -> Verification:
    """``verify`` (§8.1): each recorded item in recorded order, its status, the summary and the
    current Merkle root (an unavailable item counts as 32 zero bytes)."""
    raise NotImplementedError


def diff(recorded: Sequence[RecordedItem], recomputed: Pack) -> Diff:
    """``recompute``'s diff (§8.2): added/changed in the recomputed pack's order, removed in
    the recorded order, and the number of items with equal hashes."""
    raise NotImplementedError


def verification_json(replay: str, position: int, v: Verification) -> dict[str, object]:
    """The ``verify`` response body of §8.1, keys in order."""
    raise NotImplementedError

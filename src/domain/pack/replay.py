"""Replays of a recorded pack (§8): rebuild each recorded item from the current state and
compare hashes (``verify``), and the diff of a recomputed pack against the record
(``recompute``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import msgspec

from context_service.domain.context_set.state import ContextSetState
from context_service.domain.pack import set_items
from context_service.domain.pack.evidence import document_item, fact_item, passage_item
from context_service.domain.pack.graph import derived_from, facts_of_record
from context_service.domain.pack.items import Item, Pack, Source
from context_service.domain.pack.model import ENGINE_VERSION, Corpus, NamespaceAt
from context_service.domain.pack.receipt import ZERO_DIGEST, digest_of, item_hash, merkle_root
from context_service.domain.pack.records import Judge
from context_service.domain.pack.release import scrubbed
from context_service.domain.pack.render import pack_body
from context_service.domain.pack.request import PackRequest
from context_service.domain.pack.scope import PackScope, Readable, pack_scope

UNCHANGED, CHANGED, UNAVAILABLE = "unchanged", "changed", "unavailable"


class RecordedItem(msgspec.Struct, frozen=True, kw_only=True):
    """One item of a ``ContextPackReleased`` event: identities and hash only."""

    id: str
    cls: str
    hash: str
    source: Source


class CurrentState(msgspec.Struct, frozen=True, kw_only=True):
    """What a replay rebuilds items from: the namespace folded to the latest pack-input event,
    the usable indexes of the collections the recorded items name and of those the recorded
    request and set read now, the sets' current states by id, the recorded valid time, the
    caller's access now and the caller's bound set (``""``)."""

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


def _zero(text: str) -> int:
    return 0  # a rebuilt item's hash never depends on its cost


def rebuild_item(recorded: RecordedItem, state: CurrentState) -> Item | None:
    """The recorded item as §7.7 and §7.11 would build it now (hash set), or None when its
    source is gone or not readable by the caller (§8.1 ``unavailable``)."""
    item = _rebuild(recorded, state)
    if item is None or not all(state.readable_now(c) for c in item.concerns):
        return None
    item = scrubbed(item, lambda ref: state.readable_now(ref.partition("/")[0]))
    return msgspec.structs.replace(item, hash=item_hash(item))


def _rebuild(recorded: RecordedItem, state: CurrentState) -> Item | None:
    source = recorded.source
    if source.kind == "context_set":
        return _set_item(recorded, state)
    if not state.readable_now(source.collection_id):
        return None
    c = state.corpus.get(source.collection_id)
    if c is None:
        return None
    judge = Judge(state.corpus, state.valid_time)
    if source.kind == "passage":
        p = c.by_id.get(source.record_id)
        return passage_item(p, judge) if p is not None else None
    if source.kind == "document":
        d = c.documents.get(source.document_id)
        return document_item(d, state.corpus, judge) if d is not None else None
    if source.kind != "graph":
        return None
    anchor = c.by_id.get(source.record_id) if source.record_id else None
    if source.record_id and anchor is None:
        return None
    facts = facts_of_record(anchor, state.corpus, judge) if anchor is not None else []
    at = state.ns.collections.get(source.collection_id)
    if at is not None and at.live and at.usable and (prov := derived_from(at)) is not None:
        facts.append(prov)
    fact = next((f for f in facts if f.id == recorded.id), None)
    return fact_item(fact, anchor, state.corpus, _zero) if fact is not None else None


def _set_item(recorded: RecordedItem, state: CurrentState) -> Item | None:
    set_id = recorded.source.context_set_id
    if state.bound_set and state.bound_set != set_id:
        return None
    s = state.sets.get(set_id)
    if s is None or not s.active:
        return None
    kind, _, key = recorded.id.removeprefix(f"set:{set_id}/").partition("/")
    if kind == "answer":
        items = [set_items.answer_item(s, a, 0, _zero) for a in s.verified_answers
                 if a.id == key]
    elif kind == "definition":
        items = [set_items.definition_item(s, d, _zero) for d in s.definitions if d.term == key]
    elif kind == "instruction":
        items = [set_items.instruction_item(s, i, _zero) for i in s.instructions if i.id == key]
    else:
        items = []
    return items[0] if items else None


def recompute_scope(ns: NamespaceAt, request: PackRequest, active_set: ContextSetState | None,
                    readable_now: Readable) -> PackScope:
    """The scope of a ``recompute`` (§8.2): ``pack_scope`` with the recorded parameters, except
    that a recorded collection no longer readable now (or no longer in the active set's scope)
    contributes nothing, as the release check drops its items, instead of answering ``404``:
    the replay exists, and its diff says what went. With none of them left the pack reads no
    collection at all (an empty filter would mean every one)."""
    names = request.collection_ids
    while True:
        scope = pack_scope(ns, msgspec.structs.replace(request, collection_ids=names),
                           active_set, readable_now)
        if not scope.not_found:
            return scope
        names = tuple(n for n in names if n != scope.not_found)
        if not names:
            return pack_scope(ns, msgspec.structs.replace(request, collection_ids=()),
                              active_set, lambda _: False)


def verify(recorded: Sequence[RecordedItem], recorded_root: str,
           state: CurrentState) -> Verification:
    """``verify`` (§8.1): each recorded item in recorded order, its status, the summary and the
    current Merkle root (an unavailable item counts as 32 zero bytes)."""
    checks: list[ItemCheck] = []
    digests: list[bytes] = []
    for r in recorded:
        item = rebuild_item(r, state)
        if item is None:
            checks.append(ItemCheck(id=r.id, status=UNAVAILABLE, recorded_hash=r.hash))
            digests.append(ZERO_DIGEST)
            continue
        status = UNCHANGED if item.hash == r.hash else CHANGED
        checks.append(ItemCheck(id=r.id, status=status, recorded_hash=r.hash,
                                current_hash=item.hash))
        digests.append(digest_of(item.hash))
    current = merkle_root(digests)
    count = {s: sum(1 for c in checks if c.status == s) for s in (UNCHANGED, CHANGED,
                                                                  UNAVAILABLE)}
    return Verification(items=tuple(checks), unchanged=count[UNCHANGED],
                        changed=count[CHANGED], unavailable=count[UNAVAILABLE],
                        merkle_root=recorded_root, current_merkle_root=current,
                        matches=current == recorded_root)


def diff(recorded: Sequence[RecordedItem], recomputed: Pack) -> Diff:
    """``recompute``'s diff (§8.2): added/changed in the recomputed pack's order, removed in
    the recorded order, and the number of items with equal hashes."""
    before = {r.id: r.hash for r in recorded}
    now = {i.id for i in recomputed.items}
    return Diff(added=tuple(i.id for i in recomputed.items if i.id not in before),
                removed=tuple(r.id for r in recorded if r.id not in now),
                changed=tuple(i.id for i in recomputed.items
                              if i.id in before and before[i.id] != i.hash),
                unchanged=sum(1 for i in recomputed.items if before.get(i.id) == i.hash))


def recorded_items(pack: Pack) -> tuple[RecordedItem, ...]:
    """The identities and hashes of a pack's items, as its release records them."""
    return tuple(RecordedItem(id=i.id, cls=i.cls, hash=i.hash, source=i.source)
                 for i in pack.items)


def verification_json(replay: str, position: int, v: Verification) -> dict[str, Any]:
    """The ``verify`` response body of §8.1, keys in order."""
    items: list[dict[str, Any]] = []
    for c in v.items:
        entry: dict[str, Any] = {"id": c.id, "status": c.status, "recordedHash": c.recorded_hash}
        if c.current_hash:
            entry["currentHash"] = c.current_hash
        items.append(entry)
    return {"replayId": replay, "mode": "verify", "position": position, "items": items,
            "summary": {"unchanged": v.unchanged, "changed": v.changed,
                        "unavailable": v.unavailable},
            "merkleRoot": v.merkle_root, "currentMerkleRoot": v.current_merkle_root,
            "matches": v.matches}


def recompute_json(replay: str, recorded_engine: str, pack: Pack, d: Diff) -> dict[str, Any]:
    """The ``recompute`` response body of §8.2, keys in order."""
    return {"replayId": replay, "mode": "recompute",
            "engineVersion": {"recorded": recorded_engine, "current": ENGINE_VERSION},
            "pack": pack_body(pack),
            "diff": {"added": list(d.added), "removed": list(d.removed),
                     "changed": list(d.changed), "unchanged": d.unchanged}}

"""Replays (agent-context-api §8): ``verify`` rebuilds each recorded item from the current state
(unchanged, changed, unavailable) with the current Merkle root; ``recompute``'s diff; and the
receipt's RFC 6962 Merkle Tree Hash."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime

import msgspec
from hypothesis import given
from hypothesis import strategies as st

from context_service.domain.context_set.events import Instruction
from context_service.domain.context_set.state import ContextSetState
from context_service.domain.pack.engine import assemble
from context_service.domain.pack.items import Pack
from context_service.domain.pack.model import CollectionCorpus
from context_service.domain.pack.receipt import merkle_tree_hash
from context_service.domain.pack.replay import (
    CurrentState,
    diff,
    recompute_json,
    recorded_items,
    verification_json,
    verify,
)
from context_service.domain.pack.request import AsOf, PackRequest
from context_service.domain.pack.scope import pack_scope
from tests.unit import pack_cfo as ex

T = datetime(2025, 1, 1, tzinfo=UTC)


def released(request: PackRequest | None = None) -> Pack:
    request = request or PackRequest(task=ex.TASK, max_tokens=2000, context_set_id="finance")
    scope = pack_scope(ex.namespace(), request, ex.FINANCE, lambda c: True)
    return assemble(request, AsOf(valid_time=T, system_time=ex.SYSTEM_TIME, position=1842),
                    scope, ex.corpus(), ex.retrieval(), ex.count_tokens, lambda c: True,
                    lambda: False)


def state(corpus: dict[str, CollectionCorpus] | None = None,
          sets: dict[str, ContextSetState] | None = None, readable: str = "",
          bound: str = "") -> CurrentState:
    return CurrentState(ns=ex.namespace(), corpus=corpus if corpus is not None else ex.corpus(),
                        sets=sets if sets is not None else {"finance": ex.FINANCE},
                        valid_time=T, readable_now=lambda c: c != readable, bound_set=bound)


def statuses(pack: Pack, current: CurrentState) -> dict[str, str]:
    v = verify(recorded_items(pack), pack.merkle_root, current)
    return {c.id: c.status for c in v.items}


def test_verify_against_the_same_state_is_unchanged_and_matches() -> None:
    pack = released()
    v = verify(recorded_items(pack), pack.merkle_root, state())
    assert v.unchanged == len(pack.items) == 11 and v.changed == v.unavailable == 0
    assert v.matches and v.current_merkle_root == pack.merkle_root
    body = verification_json("rp_1", 1907, v)
    assert list(body) == ["replayId", "mode", "position", "items", "summary", "merkleRoot",
                          "currentMerkleRoot", "matches"]
    assert list(body["items"][0]) == ["id", "status", "recordedHash", "currentHash"]


def test_one_changed_record_changes_exactly_its_items() -> None:
    pack = released()
    records = tuple(msgspec.structs.replace(r, text="Tom Okafor becomes CFO of Acme in 2025.")
                    if r.id == "cfo-2025" else r for r in ex.RECORDS)
    got = statuses(pack, state(corpus=ex.corpus(records)))
    assert {i for i, s in got.items() if s != "unchanged"} == {"psg:company-facts/cfo-2025"}
    assert got["psg:company-facts/cfo-2025"] == "changed"


def test_a_removed_record_and_a_lost_fact_are_unavailable() -> None:
    pack = released()
    records = tuple(r for r in ex.RECORDS if r.id != "org-chart-finance")
    v = verify(recorded_items(pack), pack.merkle_root, state(corpus=ex.corpus(records)))
    got = {c.id: c.status for c in v.items}
    assert got["psg:company-facts/org-chart-finance"] == "unavailable"
    assert got["gph:0ee53483be7208289e15cd4e"] == "unavailable"  # the contradiction is gone
    assert got["psg:company-facts/cfo-2024"] == "changed"  # it no longer contradicts
    unavailable = [c for c in v.items if c.status == "unavailable"]
    assert all(c.current_hash == "" for c in unavailable)
    assert "currentHash" not in verification_json("rp", 1, v)["items"][4]
    digests = [bytes(32) if c.status == "unavailable" else bytes.fromhex(c.current_hash[7:])
               for c in v.items]
    assert v.current_merkle_root == "sha256:" + merkle_tree_hash(digests).hex()
    assert not v.matches


def test_a_deleted_collection_or_lost_access_makes_everything_untrusted_unavailable() -> None:
    pack = released()
    for current in (state(corpus={}), state(readable="company-facts")):
        got = statuses(pack, current)
        assert {i for i, s in got.items() if s == "unavailable"} == {
            i.id for i in pack.items if i.trust == "untrusted"}
        assert all(got[i.id] == "unchanged" for i in pack.items if i.trust == "approved")


def test_set_items_follow_the_set_s_current_version() -> None:
    pack = released()
    edited = msgspec.structs.replace(ex.FINANCE, version=4, instructions=(
        Instruction(id="cite", text="Cite every record id."),))
    got = statuses(pack, state(sets={"finance": edited}))
    assert got["set:finance/instruction/cite"] == "changed"
    assert got["set:finance/answer/current-cfo"] == "unchanged"  # the version is not hashed
    archived = msgspec.structs.replace(ex.FINANCE, archived=True)
    got = statuses(pack, state(sets={"finance": archived}))
    assert got["set:finance/definition/CFO"] == "unavailable"
    gone = msgspec.structs.replace(ex.FINANCE, definitions=())
    assert statuses(pack, state(sets={"finance": gone}))["set:finance/definition/CFO"] == (
        "unavailable")
    assert statuses(pack, state(bound="other"))["set:finance/instruction/cite"] == "unavailable"


def test_recompute_with_the_same_state_has_an_empty_diff() -> None:
    pack = released()
    d = diff(recorded_items(pack), released())
    assert d.added == d.removed == d.changed == () and d.unchanged == len(pack.items)
    body = recompute_json("rp_1", "pack-engine/1", released(), d)
    assert list(body) == ["replayId", "mode", "engineVersion", "pack", "diff"]
    assert "replayId" not in body["pack"] and "expiresAt" not in body["pack"]
    assert list(body["pack"])[:2] == ["packId", "task"]


def test_the_diff_lists_added_removed_and_changed_in_order() -> None:
    before = released()
    after = released(PackRequest(task=ex.TASK, max_tokens=256, context_set_id="finance"))
    after_items = list(after.items)
    after_items[0] = msgspec.structs.replace(after_items[0], hash="sha256:" + "0" * 64)
    d = diff(recorded_items(before), msgspec.structs.replace(after, items=tuple(after_items)))
    assert d.added == () and d.changed == ("set:finance/answer/current-cfo",)
    assert d.removed == ("gph:11146dffbb953cc59f458817", "gph:5820b4e03799ed8194a96be0",
                         "gph:0ee53483be7208289e15cd4e", "psg:company-facts/cfo-2025")
    assert d.unchanged == 6
    assert diff(recorded_items(after), before).added == d.removed


def _mth(leaves: list[bytes]) -> bytes:
    """RFC 6962 §2.1 written from its definition, independently of the engine's."""
    if not leaves:
        return hashlib.sha256().digest()
    if len(leaves) == 1:
        return hashlib.sha256(b"\0" + leaves[0]).digest()
    k = 1 << ((len(leaves) - 1).bit_length() - 1)
    return hashlib.sha256(b"\1" + _mth(leaves[:k]) + _mth(leaves[k:])).digest()


@given(st.lists(st.binary(min_size=32, max_size=32), max_size=40))
def test_merkle_tree_hash_follows_rfc_6962(leaves: list[bytes]) -> None:
    assert merkle_tree_hash(leaves) == _mth(leaves)


def test_merkle_tree_hash_of_small_trees() -> None:
    a, b, c = (hashlib.sha256(x).digest() for x in (b"a", b"b", b"c"))
    leaf = [hashlib.sha256(b"\0" + d).digest() for d in (a, b, c)]
    assert merkle_tree_hash([]).hex() == (
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
    assert merkle_tree_hash([a, b, c]) == hashlib.sha256(
        b"\1" + hashlib.sha256(b"\1" + leaf[0] + leaf[1]).digest() + leaf[2]).digest()

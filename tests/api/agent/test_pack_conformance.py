"""Packs and replays held against their contract at the edges (agent-context-api.md §5, §7,
§8): the order of checks with two faults at once, a budget filled exactly, validity and
supersession at the very instant they change, a supersession cycle and a dangling end,
contradictions across collections, duplicates that differ only in spacing and case, the stream
against the whole answer, and replays after a text, an access or a set version changed.

One service for the module: every test's workspace is a namespace of its own."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest

from tests.api.agent.own_workspace import own_with_members as own_with_members  # the fixture
from tests.api.agent.packs_support import (
    PACKS,
    REPLAYS,
    STREAM,
    Agent,
    create_context,
    grant,
    publish,
    record,
    revoke,
    violations,
)
from tests.api.agent.packs_support import module_settings as module_settings  # the fixture
from tests.api.namespaced import Namespaced
from tests.api.sets_namespaced import create_set, sets, token

pytestmark = [pytest.mark.postgres, pytest.mark.shared_service]
REV = "5" * 64
REV2 = "6" * 64
T = "2025-01-01T00:00:00Z"
JUST_BEFORE = "2024-12-31T23:59:59Z"


def body(task: str, valid: str = T, **extra: Any) -> dict[str, Any]:
    """A lexical pack request (§7.5's BM25 list exactly) at valid time ``valid``."""
    return {"task": task, "budget": {"maxTokens": 4000}, "asOf": {"validTime": valid},
            "retrieval": "lexical", **extra}


def seeded(own: Namespaced, name: str, records: list[dict[str, Any]],
           rev: str = REV) -> None:
    create_context(own, name, ws=own.ns)
    publish(own, name, rev, records, ws=own.ns)


def rec(name: str, id_: str, text: str, rev: str = REV, **extra: Any) -> dict[str, Any]:
    return record(id_, name, rev, text, **extra)


def by_id(pack: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {i["id"]: i for i in pack["items"]}


def fact_id(kind: str, a: str, b: str) -> str:
    """§5.4: ``gph:`` + 24 hex of SHA-256 over ``<kind> NUL <a> NUL <b>``."""
    return "gph:" + hashlib.sha256(f"{kind}\0{a}\0{b}".encode()).hexdigest()[:24]


def mth(digests: list[bytes]) -> bytes:
    """RFC 6962 §2.1 Merkle Tree Hash, written again from the RFC."""
    if not digests:
        return hashlib.sha256(b"").digest()
    if len(digests) == 1:
        return hashlib.sha256(b"\x00" + digests[0]).digest()
    k = 1
    while k * 2 < len(digests):
        k *= 2
    return hashlib.sha256(b"\x01" + mth(digests[:k]) + mth(digests[k:])).digest()


# --- §7.2 order of checks ---------------------------------------------------------------------


def test_field_rules_answer_before_the_context_set_and_the_set_before_collections(
        own: Namespaced) -> None:
    """§7.2: the field rules (step 6) answer before the context-set check (step 7), which
    answers before the named collections (step 9); every violated field rule is reported, in
    the rule order of §7.1."""
    create_set(own, "finance", collections=["ledger"])
    bound = Agent(own, token(own, context_set_id="finance"))
    free = Agent(own, token(own))
    bad = {"task": "x", "budget": {"maxTokens": 255}, "contextSetId": "other"}
    assert violations(bound.post(PACKS, bad)) == [
        {"path": "$.budget.maxTokens", "message": "must be between 256 and 32000"}]
    resp = bound.post(PACKS, {"task": "x", "contextSetId": "other",
                              "filters": {"collectionIds": ["nowhere"]}})
    assert resp.status_code == 403 and resp.json()["code"] == "FORBIDDEN", resp.text
    resp = free.post(PACKS, {"task": "x", "contextSetId": "unknown",
                             "filters": {"collectionIds": ["nowhere"]}})
    assert (resp.status_code, resp.json()) == (
        404, {"code": "NOT_FOUND", "message": "context set not found"})
    two = {"task": "x", "asOf": {"validTime": "yesterday", "systemTime": "2999-01-01T00:00:00Z"},
           "retrieval": "fast"}
    assert violations(free.post(PACKS, two)) == [
        {"path": "$.asOf.validTime", "message": "must be an RFC 3339 timestamp with a zone"},
        {"path": "$.asOf.systemTime", "message": "must not be later than the request"},
        {"path": "$.retrieval", "message": "must be hybrid or lexical"}]


# --- §7.6, §7.8 budget boundaries -------------------------------------------------------------


def test_an_item_exactly_filling_the_budget_is_packed_and_one_token_more_is_skipped(
        own: Namespaced) -> None:
    """§7.6, §7.8: an item whose cost equals the budget that remains fits (``usedTokens`` =
    ``maxTokens``); with one token less it is skipped, listed in ``omitted.budget`` and the
    pack is still complete (nothing was required)."""
    text = " ".join(f"lighthouse keeper {n} logs the tide" for n in range(60))
    seeded(own, "harbour", [rec("harbour", "long", text)])
    alice = Agent(own, token(own))
    only = {"documentIds": ["harbour/#long"], "sources": ["passages"]}
    first = alice.pack(body("lighthouse tide", filters=only)).json()
    cost = first["items"][0]["tokens"]
    assert cost > 257, cost
    exact = alice.pack(body("lighthouse tide", filters=only, budget={"maxTokens": cost})).json()
    assert [i["id"] for i in exact["items"]] == ["psg:harbour/long"]
    assert exact["budget"] == {"maxTokens": cost, "usedTokens": cost, "coverage": "best_effort"}
    over = alice.pack(body("lighthouse tide", filters=only,
                           budget={"maxTokens": cost - 1})).json()
    assert over["items"] == [] and over["budget"]["usedTokens"] == 0
    assert over["omitted"]["budget"] == {"count": 1, "ids": ["psg:harbour/long"]}
    assert over["complete"] is True and over["missing"] == []
    assert over["receipt"]["merkleRoot"] == "sha256:" + hashlib.sha256(b"").hexdigest()


# --- §5.3, §5.4 validity, supersession, contradiction ----------------------------------------


def test_validity_and_supersession_change_at_the_exact_instant(own: Namespaced) -> None:
    """§5.3: ``validFrom`` is inclusive and ``validTo`` exclusive, and a record is superseded
    from the instant its superseder starts; §7.5's tiers follow; §5.4's ``supersedes`` fact is
    effective from that instant, with its id and text as the formulas give them."""
    seeded(own, "tenure", [
        rec("tenure", "old", "Dana Lee chairs the harbour board.",
            validFrom="2020-01-01T00:00:00Z", validTo=T),
        rec("tenure", "new", "Priya Raman chairs the harbour board.", validFrom=T,
            supersedes=["old"])])
    alice = Agent(own, token(own))
    before = alice.pack(body("who chairs the harbour board", JUST_BEFORE)).json()
    items = by_id(before)
    assert [i["id"] for i in before["items"]][:2] == ["psg:tenure/old", "psg:tenure/new"]
    assert items["psg:tenure/old"]["validity"]["status"] == "valid"
    assert items["psg:tenure/old"]["superseded"] is False
    assert "supersededBy" not in items["psg:tenure/old"]
    assert items["psg:tenure/new"]["validity"]["status"] == "not_yet_valid"
    fact = fact_id("supersedes", "tenure/new", "tenure/old")
    assert fact not in items
    at = alice.pack(body("who chairs the harbour board", T)).json()
    items = by_id(at)
    order = [i["id"] for i in at["items"]]
    assert order.index("psg:tenure/new") < order.index("psg:tenure/old")
    assert items["psg:tenure/old"]["validity"] == {
        "validFrom": "2020-01-01T00:00:00Z", "validTo": T, "status": "expired"}
    assert items["psg:tenure/old"]["superseded"] is True
    assert items["psg:tenure/old"]["supersededBy"] == ["tenure/new"]
    assert items["psg:tenure/new"]["validity"] == {"validFrom": T, "status": "valid"}
    assert items[fact]["text"] == f'"tenure/new" supersedes "tenure/old" from {T}.'
    assert items[fact]["source"]["recordId"] == "new"  # anchored at the first candidate


def test_a_supersession_cycle_and_a_dangling_end(own: Namespaced) -> None:
    """§5.3: two records that list each other are both superseded (neither is in force, both
    tier 1) and each names the other in ``supersededBy``; §5.4: each direction is a fact of its
    own, and an id in ``supersedes`` that the index does not hold yields no fact and no flag."""
    seeded(own, "loop", [
        rec("loop", "a", "Ferry timetable alpha for the island route.", supersedes=["b"]),
        rec("loop", "b", "Ferry timetable beta for the island route.", supersedes=["a"]),
        rec("loop", "c", "Ferry timetable gamma for the island route.", supersedes=["ghost"])])
    alice = Agent(own, token(own))
    pack = alice.pack(body("ferry timetable island route")).json()
    items = by_id(pack)
    assert next(i["id"] for i in pack["items"] if i["id"].startswith("psg:")) == "psg:loop/c"
    assert items["psg:loop/a"]["supersededBy"] == ["loop/b"]
    assert items["psg:loop/b"]["supersededBy"] == ["loop/a"]
    assert items["psg:loop/c"]["superseded"] is False
    assert "supersededBy" not in items["psg:loop/c"]
    ab, ba = fact_id("supersedes", "loop/b", "loop/a"), fact_id("supersedes", "loop/a", "loop/b")
    assert items[ab]["text"] == '"loop/b" supersedes "loop/a".'
    assert items[ba]["text"] == '"loop/a" supersedes "loop/b".'
    assert not any("ghost" in i["text"] for i in pack["items"])


def test_contradictions_across_collections_ignore_case_and_punctuation(
        own: Namespaced) -> None:
    """§5.3: records of different collections with one fact key contradict when their
    normalised texts differ, not when they differ only in case and punctuation (§5.5), and an
    absorbed record still counts; §5.4: the ``contradicts`` fact orders its two references by
    code points in id and text."""
    seeded(own, "aa", [rec("aa", "cap", "The harbour capacity is 40 ships.",
                           factKey="harbour.capacity")])
    seeded(own, "bb", [rec("bb", "cap", "The harbour capacity is 45 ships.",
                           factKey="harbour.capacity"),
                       rec("bb", "echo", "the HARBOUR capacity -- is 40 ships!",
                           factKey="harbour.capacity")])
    alice = Agent(own, token(own))
    pack = alice.pack(body("harbour capacity ships")).json()
    items = by_id(pack)
    assert items["psg:aa/cap"]["contradicts"] == ["bb/cap"]
    assert items["psg:aa/cap"]["absorbed"] == ["psg:bb/echo"]
    assert items["psg:bb/cap"]["contradicts"] == ["aa/cap", "bb/echo"]
    fact = fact_id("contradicts", "aa/cap", "bb/cap")
    assert items[fact]["text"] == ('"aa/cap" and "bb/cap" state different things for '
                                   'fact "harbour.capacity".')
    assert fact_id("contradicts", "aa/cap", "bb/echo") not in items
    assert fact_id("contradicts", "bb/cap", "bb/echo") in items


# --- §5.5, §7.8 deduplication -----------------------------------------------------------------


def test_texts_differing_only_in_spacing_and_case_are_absorbed_across_collections(
        own: Namespaced) -> None:
    """§5.5: exact duplicates compare normalised texts, so spacing, case and punctuation do not
    matter; §7.8: the later candidate is absorbed by the earliest kept one, even in another
    collection, listed in ``omitted.duplicate`` and in the keeper's ``absorbed``."""
    seeded(own, "alpha", [rec("alpha", "r1", "Quarterly revenue grew by ten percent in Lisbon.")])
    seeded(own, "beta", [rec("beta", "r2", "quarterly   REVENUE grew,\nby ten percent in lisbon")])
    alice = Agent(own, token(own))
    pack = alice.pack(body("quarterly revenue Lisbon")).json()
    items = by_id(pack)
    assert "psg:beta/r2" not in items
    assert items["psg:alpha/r1"]["absorbed"] == ["psg:beta/r2"]
    assert pack["omitted"]["duplicate"] == {"count": 1, "ids": ["psg:beta/r2"]}


# --- §7.14 streaming --------------------------------------------------------------------------


def test_the_stream_carries_the_bytes_of_the_whole_answer(own: Namespaced) -> None:
    """§7.14, §1.2: every item line holds the very bytes of the same item in the JSON answer
    (escapes included: a tab, a quote, a backslash, non-ASCII), the header and footer hold the
    same ids, receipt and omissions, and asking twice records one replay."""
    text = 'Caf\u00e9 "Porto"\tserves \\ espresso \u2014 \u00fcber fast \u20ac2.'
    seeded(own, "menu", [rec("menu", "coffee", text),
                         rec("menu", "tea", "Caf\u00e9 Porto serves tea at noon.")])
    alice = Agent(own, token(own))
    req = body("caf\u00e9 porto espresso")
    whole = alice.pack(req)
    stream = alice.pack(req, STREAM)
    assert stream.headers["Content-Type"].startswith("application/x-ndjson")
    lines = stream.content.split(b"\n")
    assert lines[-1] == b""
    lines = lines[:-1]
    answer = whole.json()
    header, footer = json.loads(lines[0]), json.loads(lines[-1])
    assert header == {"type": "header", "packId": answer["packId"],
                      "replayId": answer["replayId"], "asOf": answer["asOf"],
                      "budget": {"maxTokens": 4000, "coverage": "best_effort"}}
    assert footer == {"type": "footer", "usedTokens": answer["budget"]["usedTokens"],
                      "complete": answer["complete"], "omitted": answer["omitted"],
                      "missing": answer["missing"], "receipt": answer["receipt"],
                      "expiresAt": answer["expiresAt"]}
    raw = whole.content
    prefix = b'{"type":"item","item":'
    items = [line[len(prefix):-1] for line in lines[1:-1]]
    assert all(line.startswith(prefix) and line.endswith(b"}") for line in lines[1:-1])
    assert b"[" + b",".join(items) + b"]" in raw
    assert len(items) == len(answer["items"]) and items
    assert b"\\t" in raw and "\u00e9".encode() in raw and b"\\u00e9" not in raw
    assert whole.headers["X-Context-Position"] == stream.headers["X-Context-Position"]


# --- §8 replays -------------------------------------------------------------------------------


def test_verify_after_a_text_changed_and_a_collection_became_unreadable(
        own: Namespaced) -> None:
    """§8.1: an item whose text changed is ``changed`` with both hashes; an item of a collection
    the caller can no longer read is ``unavailable`` without ``currentHash``; the current root
    is the RFC 6962 root over the current hashes in recorded order, zeros for unavailable."""
    seeded(own, "dock", [rec("dock", "crane", "Crane four lifts forty tonnes at the dock.")])
    seeded(own, "yard", [rec("yard", "crane", "Crane nine lifts twelve tonnes in the yard.")])
    for name in ("dock", "yard"):
        grant(own, name, "user:adam", "read", ws=own.ns)
    adam = Agent(own, token(own, creator="user:adam"))
    pack = adam.pack(body("crane lifts tonnes", filters={"sources": ["passages"]})).json()
    assert {i["id"] for i in pack["items"]} == {"psg:dock/crane", "psg:yard/crane"}
    publish(own, "dock", REV2, [rec("dock", "crane", "Crane four lifts fifty tonnes at the dock.",
                                    rev=REV2)], ws=own.ns)
    revoke(own, "yard", "user:adam", ws=own.ns)
    resp = adam.post(f"{REPLAYS}/{pack['replayId']}", {"mode": "verify"})
    assert resp.status_code == 200, resp.text
    answer = resp.json()
    assert list(answer) == ["replayId", "mode", "position", "items", "summary", "merkleRoot",
                            "currentMerkleRoot", "matches"]
    status = {i["id"]: i for i in answer["items"]}
    assert [i["id"] for i in answer["items"]] == [i["id"] for i in pack["items"]]
    dock, yard = status["psg:dock/crane"], status["psg:yard/crane"]
    assert dock["status"] == "changed" and dock["currentHash"] != dock["recordedHash"]
    assert yard == {"id": "psg:yard/crane", "status": "unavailable",
                    "recordedHash": by_id(pack)["psg:yard/crane"]["hash"]}
    assert answer["summary"] == {"unchanged": 0, "changed": 1, "unavailable": 1}
    digests = [bytes(32) if i["status"] == "unavailable"
               else bytes.fromhex(i["currentHash"].removeprefix("sha256:"))
               for i in answer["items"]]
    assert answer["currentMerkleRoot"] == "sha256:" + mth(digests).hex()
    assert answer["merkleRoot"] == pack["receipt"]["merkleRoot"]
    assert answer["matches"] is False


def test_verify_after_a_set_version_changed(own: Namespaced) -> None:
    """§8.1: set items are rebuilt from the set's current version: an instruction whose text
    changed is ``changed``, one removed is ``unavailable``, one untouched is ``unchanged``
    although the version moved (the version is not hashed, §7.12)."""
    seeded(own, "ledger", [rec("ledger", "q1", "Ledger totals for the first quarter.")])
    fields = {"collections": ["ledger"],
              "instructions": [{"id": "cite", "text": "Cite every record id."},
                               {"id": "brief", "text": "Answer in one sentence."},
                               {"id": "tone", "text": "Stay neutral."}]}
    create_set(own, "books", **fields)
    alice = Agent(own, token(own))
    pack = alice.pack(body("ledger totals quarter", contextSetId="books")).json()
    ids = [i["id"] for i in pack["items"]]
    assert ids[:3] == ["set:books/instruction/cite", "set:books/instruction/brief",
                       "set:books/instruction/tone"]
    resp = own.as_("user:alice").put(f"{sets(own)}/books", {
        "name": "Finance", "collections": ["ledger"],
        "instructions": [{"id": "cite", "text": "Cite every record id, always."},
                         {"id": "tone", "text": "Stay neutral."}]})
    assert resp.status_code == 200 and resp.json()["version"] == 2, resp.text
    answer = alice.post(f"{REPLAYS}/{pack['replayId']}", {"mode": "verify"}).json()
    status = {i["id"]: i["status"] for i in answer["items"]}
    assert status["set:books/instruction/cite"] == "changed"
    assert status["set:books/instruction/brief"] == "unavailable"
    assert status["set:books/instruction/tone"] == "unchanged"
    assert status["psg:ledger/q1"] == "unchanged"


def test_recompute_diff_after_a_collection_became_unreadable(own: Namespaced) -> None:
    """§8.2: the recompute reads the recorded position with the caller's access now: the items
    of a collection no longer readable are ``removed`` (recorded order), the others
    ``unchanged``; the diff's keys are ``added``, ``removed``, ``changed``, ``unchanged``, and
    the pack has neither ``replayId`` nor ``expiresAt``."""
    seeded(own, "north", [rec("north", "n1", "Pier lights switch on at dusk in the north."),
                          rec("north", "n2", "Pier gates close at dusk in the north.")])
    seeded(own, "south", [rec("south", "s1", "Pier lights switch on at dusk in the south.")])
    for name in ("north", "south"):
        grant(own, name, "user:adam", "read", ws=own.ns)
    adam = Agent(own, token(own, creator="user:adam"))
    task = "pier dusk"
    pack = adam.pack(body(task, filters={"sources": ["passages"]})).json()
    recorded = [i["id"] for i in pack["items"]]
    assert set(recorded) == {"psg:north/n1", "psg:north/n2", "psg:south/s1"}
    revoke(own, "north", "user:adam", ws=own.ns)
    resp = adam.post(f"{REPLAYS}/{pack['replayId']}", {"mode": "recompute", "task": task})
    assert resp.status_code == 200, resp.text
    answer = resp.json()
    assert list(answer) == ["replayId", "mode", "engineVersion", "pack", "diff"]
    assert "replayId" not in answer["pack"] and "expiresAt" not in answer["pack"]
    assert answer["diff"] == {"added": [], "removed": [i for i in recorded if "north" in i],
                              "changed": [], "unchanged": 1}
    assert answer["pack"]["asOf"] == pack["asOf"]
    assert [i["id"] for i in answer["pack"]["items"]] == ["psg:south/s1"]


# --- §7.4, §7.12 a set not in force at P; identities by hand ---------------------------------


def credential(own: Namespaced) -> tuple[str, str]:
    """A read-only credential of alice's: its id and its token."""
    resp = own.as_("user:alice").post(f"/api/w/{own.ns}/agent-credentials", {
        "name": "agent", "scopes": ["context:read"], "expiresInDays": 30})
    assert resp.status_code == 201, resp.text
    return resp.json()["id"], resp.json()["token"]


def compact(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def test_a_set_created_after_p_is_not_in_force_and_its_version_is_zero(
        own: Namespaced) -> None:
    """§7.4: a set with no version at P contributes no set items, the pack reads its current
    collections and reports it ``not_in_force``; §7.12: the canonical request then names the
    set with ``contextSetVersion`` 0, and ``packId``, ``replayId`` and ``merkleRoot`` follow
    their formulas byte for byte."""
    seeded(own, "vault", [rec("vault", "v1", "The vault opens at nine every weekday.")])
    cred_id, value = credential(own)
    alice = Agent(own, value)
    p0 = alice.pack(body("vault opens")).json()["asOf"]
    create_set(own, "late", collections=["vault"],
               instructions=[{"id": "cite", "text": "Cite every record id."}])
    req = body("vault opens", contextSetId="late",
               asOf={"validTime": T, "systemTime": p0["systemTime"]})
    resp = alice.pack(req)
    pack = resp.json()
    assert pack["asOf"] == {"validTime": T, "systemTime": p0["systemTime"],
                            "position": p0["position"]}
    assert [i["id"] for i in pack["items"]] == ["psg:vault/v1"]
    assert pack["missing"] == [{"kind": "context_set", "id": "late", "reason": "not_in_force"}]
    assert pack["complete"] is False
    raw = resp.content
    digested = b"{" + raw[raw.index(b'"task":'):raw.rindex(b',"expiresAt":')] + b"}"
    digest = hashlib.sha256(digested).hexdigest()
    assert pack["packId"] == "pk_" + digest[:32]
    leaves = [bytes.fromhex(i["hash"].removeprefix("sha256:")) for i in pack["items"]]
    assert pack["receipt"] == {"algorithm": "sha256", "merkleRoot": "sha256:" + mth(leaves).hex(),
                               "position": p0["position"]}
    canonical = compact({
        "taskSha256": hashlib.sha256(b"vault opens").hexdigest(),
        "budget": {"maxTokens": 4000, "maxLatencyMs": 15000, "coverage": "best_effort"},
        "asOf": pack["asOf"],
        "filters": {"collectionIds": [], "documentIds": [],
                    "sources": ["passages", "graph", "documents"]},
        "retrieval": "lexical", "contextSetId": "late", "contextSetVersion": 0,
        "engineVersion": "pack-engine/2"})
    expected = hashlib.sha256(cred_id.encode() + b"\n" + canonical + b"\n"
                              + digest.encode()).hexdigest()
    assert pack["replayId"] == "rp_" + expected[:32]


# --- §5.2 document ids ------------------------------------------------------------------------


def test_document_ids_escape_percent_and_a_leading_hash(own: Namespaced) -> None:
    """§5.2: in the ``<file>`` part a ``%`` is written ``%25`` and a leading ``#`` ``%23``, so
    a file named ``#x`` and a record ``x`` without file are different documents; a requested
    id is matched in that escaped form and one naming no document is ``unavailable``."""
    seeded(own, "shop", [
        rec("shop", "p1", "Spring sale: half price on umbrellas.", file="50% off.md"),
        rec("shop", "p2", "Spring sale ends on Sunday.", file="50% off.md"),
        rec("shop", "h1", "Spring sale hashtag campaign for umbrellas.", file="#tag.md"),
        rec("shop", "tag.md", "Spring sale tag printing for umbrellas.")])
    alice = Agent(own, token(own))
    wanted = ["shop/50%25 off.md", "shop/%23tag.md", "shop/#tag.md", "shop/#h1"]
    pack = alice.pack(body("spring sale umbrellas", filters={"documentIds": wanted})).json()
    items = by_id(pack)
    assert items["psg:shop/p1"]["source"]["documentId"] == "shop/50%25 off.md"
    assert items["psg:shop/h1"]["source"]["documentId"] == "shop/%23tag.md"
    assert items["psg:shop/tag.md"]["source"]["documentId"] == "shop/#tag.md"
    assert pack["missing"] == [{"kind": "document", "documentId": "shop/#h1",
                                "reason": "unavailable"}]


def test_verify_of_facts_and_documents_and_a_recompute_pinned_to_p(own: Namespaced) -> None:
    """§8.1: a ``supersedes`` fact whose superseder left the index is ``unavailable`` (no longer
    effective), a whole document one of whose records changed is ``changed``; §8.2: a recompute
    reads the recorded position, so after those changes and a new set version its diff is
    empty and its ``packId`` and receipt are the recorded ones."""
    records = [rec("rota", "old", "Night shift rota lists Ana on Mondays."),
               rec("rota", "new", "Night shift rota lists Ben on Mondays.", supersedes=["old"]),
               rec("rota", "d1", "Night shift rota handbook part one covers the Mondays desk.",
                   file="handbook.md"),
               rec("rota", "d2", "The handbook second part covers weekend cover.",
                   file="handbook.md")]
    seeded(own, "rota", records)
    create_set(own, "ops", collections=["rota"],
               instructions=[{"id": "cite", "text": "Cite every record id."}])
    alice = Agent(own, token(own))
    task = "night shift rota mondays"
    pack = alice.pack(body(task, contextSetId="ops",
                           filters={"sources": ["graph", "documents"]})).json()
    items = by_id(pack)
    fact = fact_id("supersedes", "rota/new", "rota/old")
    assert fact in items and "doc:rota/handbook.md" in items
    changed = [records[0], records[2],
               rec("rota", "d2", "The handbook second part covers holiday cover.")]
    publish(own, "rota", REV2, [{**r, "revision": REV2} for r in changed], ws=own.ns)
    resp = own.as_("user:alice").put(f"{sets(own)}/ops", {
        "name": "Finance", "collections": ["rota"],
        "instructions": [{"id": "cite", "text": "Cite every record id, always."}]})
    assert resp.status_code == 200, resp.text
    answer = alice.post(f"{REPLAYS}/{pack['replayId']}", {"mode": "verify"}).json()
    status = {i["id"]: i["status"] for i in answer["items"]}
    assert status[fact] == "unavailable"
    assert status["doc:rota/handbook.md"] == "changed"
    assert status["set:ops/instruction/cite"] == "changed"
    again = alice.post(f"{REPLAYS}/{pack['replayId']}", {"mode": "recompute", "task": task})
    assert again.status_code == 200, again.text
    recomputed = again.json()
    assert recomputed["diff"] == {"added": [], "removed": [], "changed": [],
                                  "unchanged": len(pack["items"])}
    assert recomputed["pack"]["packId"] == pack["packId"]
    assert recomputed["pack"]["receipt"] == pack["receipt"]


def test_verify_ignores_a_collection_created_after_the_pack(own: Namespaced) -> None:
    """§8.1: contradictions are looked for among the collections the recorded items name (and,
    as the pack read them, the collections of its scope at P); a collection created after the
    pack is neither, so a record of it sharing a fact key does not turn a recorded passage
    ``changed``: nothing the pack stood on has changed."""
    seeded(own, "first", [rec("first", "cap", "The quay depth is nine metres.",
                              factKey="quay.depth")])
    alice = Agent(own, token(own))
    pack = alice.pack(body("quay depth metres", filters={"sources": ["passages"]})).json()
    assert [i["id"] for i in pack["items"]] == ["psg:first/cap"]
    assert "contradicts" not in pack["items"][0]
    seeded(own, "later", [rec("later", "cap", "The quay depth is eleven metres.",
                              factKey="quay.depth")])
    answer = alice.post(f"{REPLAYS}/{pack['replayId']}", {"mode": "verify"}).json()
    assert answer["items"] == [{"id": "psg:first/cap", "status": "unchanged",
                                "recordedHash": pack["items"][0]["hash"],
                                "currentHash": pack["items"][0]["hash"]}]
    assert answer["matches"] is True


def test_a_requested_document_of_a_missing_or_hidden_collection_is_unavailable(
        own: Namespaced) -> None:
    """§7.4: a requested ``documentId`` with no eligible record is reported ``unavailable``
    whether its document, its collection or the caller's access is what is missing, so the
    pack is incomplete (and ``require_complete`` refuses it, §7.10); the hidden and the absent
    collection answer alike."""
    seeded(own, "open", [rec("open", "o1", "Gate four opens at six.")])
    seeded(own, "hidden", [rec("hidden", "h1", "Gate five opens at seven.")])
    adam = Agent(own, token(own, creator="user:adam"))
    grant(own, "open", "user:adam", "read", ws=own.ns)
    wanted = ["open/#o1", "nowhere/#x", "hidden/#h1", "open/#gone"]
    pack = adam.pack(body("gate opens", filters={"documentIds": wanted})).json()
    assert [i["id"] for i in pack["items"] if i["id"].startswith("psg:")] == ["psg:open/o1"]
    assert pack["missing"] == [
        {"kind": "document", "documentId": d, "reason": "unavailable"} for d in wanted[1:]]
    assert pack["complete"] is False
    strict = {**body("gate opens", filters={"documentIds": wanted}),
              "budget": {"maxTokens": 4000, "coverage": "require_complete"}}
    resp = adam.post(PACKS, strict)
    assert resp.status_code == 422, resp.text
    assert resp.json()["details"]["missing"] == pack["missing"]

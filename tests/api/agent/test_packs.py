"""Context packs over HTTP with real PostgreSQL (agent-context-api.md §7): the response and its
headers, determinism (same request, same bytes, nothing new recorded), the stream carrying the
same pack, named collections, require_complete, the release check against access now, and a
release recorded with hashes and identities only. Each test packs from a workspace of its own;
the tests rebuilding every view or changing the pack ports are in test_packs_service_wide.py."""

from __future__ import annotations

import io
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import pytest
from litestar.testing import TestClient

from context_service import bootstrap
from context_service.adapters.eventstore.export import export
from context_service.adapters.eventstore.store import EVENTS_TABLE
from tests.api.agent.own_workspace import alice_reading as alice_reading  # the fixtures
from tests.api.agent.own_workspace import own_with_corpus as own_with_corpus
from tests.api.agent.packs_corpus import (
    FACTS,
    NOTES,
    TASK,
    facts_records,
    pack_body,
)
from tests.api.agent.packs_support import PACKS, STREAM, Agent, publish
from tests.api.agent.packs_support import module_settings as module_settings  # the fixture
from tests.api.namespaced import Namespaced
from tests.api.sets_namespaced import create_set, token

# one service for the module: every test's workspace is a namespace of its own
pytestmark = [pytest.mark.postgres, pytest.mark.shared_service]
TIMING = re.compile(r"^wait;dur=\d+\.\d, retrieve;dur=\d+\.\d, pack;dur=\d+\.\d, "
                    r"total;dur=\d+\.\d$")
KEYS = ["packId", "replayId", "task", "asOf", "budget", "complete", "items", "omitted",
        "missing", "receipt", "expiresAt"]


def released(container: bootstrap.Container) -> list[bytes]:
    with container.datastore.transaction(commit=False) as cur:
        cur.execute(f"SELECT state FROM {EVENTS_TABLE} WHERE topic = 'ContextPackReleased'"
                    " ORDER BY notification_id")
        return [bytes(r["state"]) for r in cur.fetchall()]


@pytest.fixture
def releases(container: bootstrap.Container) -> Callable[[], list[bytes]]:
    """The releases recorded since the test began: the module's tests run one after another
    on its one service, so these are the test's own."""
    earlier = len(released(container))
    return lambda: released(container)[earlier:]


def test_a_pack_has_the_documented_shape_and_headers(alice: Agent) -> None:
    resp = alice.pack(pack_body())
    body = resp.json()
    assert list(body) == KEYS
    assert re.fullmatch(r"pk_[0-9a-f]{32}", body["packId"])
    assert re.fullmatch(r"rp_[0-9a-f]{32}", body["replayId"])
    assert body["task"] == TASK
    assert body["asOf"]["validTime"] == "2025-01-01T00:00:00Z"
    assert body["asOf"]["position"] > 0
    assert body["budget"] == {"maxTokens": 2000, "usedTokens": body["budget"]["usedTokens"],
                              "coverage": "best_effort"}
    assert 0 < body["budget"]["usedTokens"] <= 2000
    assert body["budget"]["usedTokens"] == sum(i["tokens"] for i in body["items"])
    ids = [i["id"] for i in body["items"]]
    assert "psg:company-facts/cfo-2024" in ids and "psg:notes/n1" in ids
    assert all(i["trust"] == "untrusted" and re.fullmatch(r"sha256:[0-9a-f]{64}", i["hash"])
               for i in body["items"])
    assert body["receipt"]["algorithm"] == "sha256"
    assert body["receipt"]["position"] == body["asOf"]["position"]
    assert resp.headers["Content-Type"].startswith("application/json")
    assert TIMING.match(resp.headers["Server-Timing"]), resp.headers["Server-Timing"]
    assert int(resp.headers["X-Context-Position"]) > body["asOf"]["position"]


def test_the_position_is_the_latest_pack_input_event(alice: Agent, own: Namespaced) -> None:
    first = alice.pack(pack_body()).json()["asOf"]
    token(own)  # a credential event is not a pack input: the position stays
    assert alice.pack(pack_body()).json()["asOf"] == first
    publish(own, FACTS, "5" * 64, facts_records("Acme appointed Priya Raman as CFO.", "5" * 64),
            ws=own.ns)
    moved = alice.pack(pack_body()).json()["asOf"]
    assert moved["position"] > first["position"]
    assert moved["systemTime"] >= first["systemTime"]


def test_the_same_request_answers_the_same_bytes_and_records_once(
        alice: Agent, container: bootstrap.Container,
        releases: Callable[[], list[bytes]]) -> None:
    first = alice.pack(pack_body())
    second = alice.pack(pack_body())
    assert first.content == second.content
    assert first.headers["X-Context-Position"] == second.headers["X-Context-Position"]
    # another app over the same database (a second replica) answers the same bytes too
    with TestClient(app=bootstrap.app(container)) as other:
        third = other.post(PACKS, json=pack_body(),
                           headers={"Authorization": f"Bearer {alice.token}"})
    assert third.status_code == 200 and third.content == first.content
    assert len(releases()) == 1
    # another parameter is another replay
    fourth = alice.pack(pack_body(retrieval="lexical"))
    assert fourth.json()["replayId"] != first.json()["replayId"]
    assert len(releases()) == 2


def test_the_order_of_the_route_checks(own: Namespaced) -> None:
    """Set before position, collections before retrieval, completeness last."""
    create_set(own, "finance", collections=[FACTS])
    bound = Agent(own, token(own, context_set_id="finance"))
    resp = bound.post(PACKS, pack_body(contextSetId="legal",
                                       filters={"collectionIds": ["nope"]}))
    assert resp.status_code == 403
    resp = bound.post(PACKS, pack_body(filters={"collectionIds": [NOTES]},
                                       budget={"maxTokens": 2000,
                                               "coverage": "require_complete"}))
    assert (resp.status_code, resp.json()["message"]) == (404, f'collection "{NOTES}" not found')


def test_the_stream_carries_the_same_pack(alice: Agent,
                                          releases: Callable[[], list[bytes]]) -> None:
    packed = alice.pack(pack_body())
    streamed = alice.pack(pack_body(), path=STREAM)
    assert streamed.headers["Content-Type"].startswith("application/x-ndjson")
    assert streamed.headers["X-Context-Position"] == packed.headers["X-Context-Position"]
    assert TIMING.match(streamed.headers["Server-Timing"])
    assert streamed.content.endswith(b"\n")
    lines = [msgspec.json.decode(line) for line in streamed.content.split(b"\n")[:-1]]
    body = packed.json()
    header, *items, footer = lines
    assert header == {"type": "header", "packId": body["packId"], "replayId": body["replayId"],
                      "asOf": body["asOf"],
                      "budget": {"maxTokens": 2000, "coverage": "best_effort"}}
    assert items == [{"type": "item", "item": i} for i in body["items"]]
    assert footer == {"type": "footer", "usedTokens": body["budget"]["usedTokens"],
                      "complete": body["complete"], "omitted": body["omitted"],
                      "missing": body["missing"], "receipt": body["receipt"],
                      "expiresAt": body["expiresAt"]}
    assert len(releases()) == 1  # the same replay


def test_named_collections_must_be_readable_now(alice: Agent, own: Namespaced) -> None:
    adam = Agent(own, token(own, creator="user:adam"))
    for agent, named, missing in ((alice, [FACTS, "nope"], "nope"),
                                  (adam, [FACTS, NOTES], NOTES),
                                  (adam, ["", FACTS], None)):
        resp = agent.post(PACKS, pack_body(filters={"collectionIds": named}))
        if missing is None:
            assert resp.status_code == 400
            continue
        assert (resp.status_code, resp.json()) == (404, {
            "code": "NOT_FOUND", "message": f'collection "{missing}" not found'})
    # without the filter, adam's pack leaves the unreadable collection out silently
    items = adam.pack(pack_body()).json()["items"]
    assert items and all(i["source"]["collectionId"] == FACTS for i in items)
    only = alice.pack(pack_body(filters={"collectionIds": [NOTES, NOTES]})).json()["items"]
    assert only and all(i["source"]["collectionId"] == NOTES for i in only)


def test_require_complete_refuses_an_incomplete_pack_and_records_nothing(
        alice: Agent, container: bootstrap.Container) -> None:
    head = container.store.head()
    body = pack_body(budget={"maxTokens": 2000, "coverage": "require_complete"},
                     filters={"documentIds": [f"{FACTS}/press/2024-06-cfo.md",
                                              f"{FACTS}/no-such.md"]})
    resp = alice.post(PACKS, body)
    assert (resp.status_code, resp.json()) == (422, {
        "code": "AGENT_PACK_INCOMPLETE", "message": "the pack is incomplete",
        "details": {"missing": [{"kind": "document", "documentId": f"{FACTS}/no-such.md",
                                 "reason": "unavailable"}]}})
    assert alice.post(STREAM, body).status_code == 422
    assert container.store.head() == head
    best = alice.pack({**body, "budget": {"maxTokens": 2000}}).json()
    assert best["complete"] is False and best["missing"] == resp.json()["details"]["missing"]


def test_a_release_records_hashes_and_identities_only(
        alice: Agent, container: bootstrap.Container,
        releases: Callable[[], list[bytes]]) -> None:
    body = alice.pack(pack_body()).json()
    [stored] = releases()
    event = msgspec.json.decode(stored)["e"]
    assert event["replay_id"] == body["replayId"] and event["pack_id"] == body["packId"]
    assert [i["id"] for i in event["items"]] == [i["id"] for i in body["items"]]
    assert [i["hash"] for i in event["items"]] == [i["hash"] for i in body["items"]]
    assert event["merkle_root"] == body["receipt"]["merkleRoot"]
    texts = [TASK, *(i["text"] for i in body["items"])]
    out = io.BytesIO()
    export(container.store, out)
    packs_exported = b"\n".join(line for line in out.getvalue().split(b"\n")
                                if b"context_pack" in line)
    assert packs_exported
    for text in texts:
        assert text.encode() not in stored
        assert msgspec.json.encode(text)[1:-1] not in packs_exported


@pytest.fixture(scope="module")
def tokenizer() -> Any:
    """The model's own tokenizer file, read directly (not through the service's adapter)."""
    import wordllama
    from tokenizers import Tokenizer

    path = Path(wordllama.__file__).parent / "tokenizers" / "l2_supercat_tokenizer_config.json"
    loaded = Tokenizer.from_file(str(path))
    loaded.no_padding()
    loaded.no_truncation()
    return loaded


def test_budgets_hold_and_costs_are_the_tokenizers(alice: Agent, own: Namespaced,
                                                   tokenizer: Any) -> None:
    """Every released item costs its text's tokens + 16; a budget smaller than the whole pack
    skips items instead of exceeding it."""
    texts = [f"The CFO signed contract {n} for the finance team's quarterly audit cycle."
             for n in range(12)]
    publish(own, NOTES, "8" * 64, [
        {"id": f"c{n}", "context": NOTES, "type": "memory", "revision": "8" * 64, "text": t,
         "source": {"context": "", "type": "", "revision": ""}} for n, t in enumerate(texts)],
            ws=own.ns)
    whole = alice.pack(pack_body(budget={"maxTokens": 32000})).json()
    assert whole["budget"]["usedTokens"] > 256
    for max_tokens in (256, 300, 420, whole["budget"]["usedTokens"], 32000):
        body = alice.pack(pack_body(budget={"maxTokens": max_tokens})).json()
        used = body["budget"]["usedTokens"]
        assert used == sum(i["tokens"] for i in body["items"]) <= max_tokens
        for item in body["items"]:
            count = len(tokenizer.encode(item["text"], add_special_tokens=False).ids)
            assert item["tokens"] == count + 16, item["id"]
        skipped = body["omitted"]["budget"]["count"]
        assert (skipped > 0) == (max_tokens < whole["budget"]["usedTokens"]), max_tokens

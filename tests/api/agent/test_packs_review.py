"""Context packs at the HTTP edge, reviewed (agent-context-api.md §7.5, §7.8, §7.14): a set
repeating a requirement's query asks for its list once, and the stream carries the pack of the
JSON answer at the budget's edges.

One service for the module: every test's workspace is a namespace of its own."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import msgspec
import pytest
from litestar.utils import sync as litestar_sync

from tests.api.agent.own_workspace import alice_reading as alice_reading  # the fixtures
from tests.api.agent.own_workspace import own_with_corpus as own_with_corpus
from tests.api.agent.packs_corpus import FACTS, pack_body
from tests.api.agent.packs_support import (
    STREAM,
    Agent,
    HookedRetrieval,
    pack_services,
    publish,
    record,
)
from tests.api.agent.packs_support import module_settings as module_settings  # the fixture
from tests.api.namespaced import Namespaced
from tests.api.sets_namespaced import create_set

pytestmark = [pytest.mark.postgres, pytest.mark.shared_service]
QUERY = "CFO appointment"


def requirement(id_: str, query: str = QUERY) -> dict[str, str]:
    return {"id": id_, "description": "evidence of the appointment", "query": query}


@pytest.fixture
def lists_asked(own: Namespaced) -> Iterator[list[int]]:
    """One entry per lexical or hybrid list the service's retrieval computes meanwhile."""
    packs = pack_services(own)
    original = packs.ports
    assert original is not None
    asked: list[int] = []
    packs.ports = replace(original, retrieval=HookedRetrieval(original.retrieval,
                                                              lambda: asked.append(1)))
    try:
        yield asked
    finally:
        packs.ports = original


@pytest.mark.parametrize(("retrieval", "lists"), [("hybrid", 3), ("lexical", 2)])
def test_a_repeated_requirement_query_is_retrieved_once(
        alice: Agent, own: Namespaced, lists_asked: list[int], retrieval: str,
        lists: int) -> None:
    """Twenty requirements of one query cost one list, not twenty (§6.3 allows 20 requirements
    and says nothing against repeating a query): the task's list, one list for the repeated
    query and one for the other (hybrid); lexical mode asks the task's list and the
    requirements' alike, so a task equal to the query shares it too."""
    reqs = [requirement(f"r{i}") for i in range(19)] + [requirement("chart", "org chart")]
    create_set(own, "finance", collections=[FACTS], requiredEvidence=reqs)
    body = pack_body(task=QUERY, contextSetId="finance", retrieval=retrieval)
    pack = alice.pack(body).json()
    assert len(lists_asked) == lists
    required = [i for i in pack["items"] if i["class"] == "required_evidence"]
    assert required and all(i["requirementIds"][:19] == [f"r{n}" for n in range(19)]
                            for i in required if "r0" in i["requirementIds"])
    assert any("chart" in i["requirementIds"] for i in required)
    assert pack["complete"] is True


def stream_of(resp: Any) -> tuple[dict[str, Any], list[dict[str, Any]], dict[str, Any]]:
    assert resp.content.endswith(b"\n")
    header, *items, footer = [msgspec.json.decode(line)
                              for line in resp.content.split(b"\n")[:-1]]
    return header, [i["item"] for i in items], footer


@pytest.mark.parametrize("max_tokens", [256, 300, 32000])
def test_the_stream_is_the_json_pack_at_the_budget_s_edges(
        alice: Agent, own: Namespaced, max_tokens: int) -> None:
    """One item alone larger than the budget is skipped (never cut) and packing goes on with the
    smaller ones; the stream's lines carry exactly the JSON answer's pack, its footer's
    ``usedTokens`` the sum of its items' costs."""
    revision = "b" * 64
    publish(own, FACTS, revision, [
        record("big", FACTS, revision, "CFO appointment " + "minutes " * 400),
        record("small", FACTS, revision, "The CFO appointment was announced in July.")],
        ws=own.ns)
    body = pack_body(task=QUERY, budget={"maxTokens": max_tokens})
    packed = alice.pack(body)
    streamed = alice.pack(body, path=STREAM)
    pack = packed.json()
    header, items, footer = stream_of(streamed)
    assert (header["packId"], header["replayId"]) == (pack["packId"], pack["replayId"])
    assert items == pack["items"]
    assert footer["usedTokens"] == pack["budget"]["usedTokens"] == sum(
        i["tokens"] for i in items) <= max_tokens
    assert {k: footer[k] for k in ("complete", "omitted", "missing", "receipt", "expiresAt")} \
        == {k: pack[k] for k in ("complete", "omitted", "missing", "receipt", "expiresAt")}
    ids = [i["id"] for i in items]
    assert f"psg:{FACTS}/small" in ids
    if max_tokens < 400:  # the big record costs more than the whole budget
        assert f"psg:{FACTS}/big" not in ids
        assert f"psg:{FACTS}/big" in pack["omitted"]["budget"]["ids"]
    else:
        assert f"psg:{FACTS}/big" in ids


def test_writing_a_stream_costs_no_worker_thread_per_item(
        alice: Agent, own: Namespaced, monkeypatch: pytest.MonkeyPatch) -> None:
    """The lines are in memory once the pack is recorded: sending them needs no worker thread
    per line (a sync iterator costs Litestar a hop to the default executor per line, six
    threads on two cores, shared with the rest of the process), so a stream of twelve items
    costs the threads of a stream of one."""
    hops: list[str] = []
    real = litestar_sync.sync_to_thread

    async def counted(fn: Any, *args: Any, **kwargs: Any) -> Any:
        hops.append(getattr(fn, "__name__", ""))
        return await real(fn, *args, **kwargs)

    monkeypatch.setattr(litestar_sync, "sync_to_thread", counted)
    revision = "c" * 64
    publish(own, FACTS, revision, [record(f"cfo-{n}", FACTS, revision,
                                          f"CFO appointment note number {n}.")
                                   for n in range(12)], ws=own.ns)
    spent = []
    for filters in ({"documentIds": [f"{FACTS}/#cfo-0"]}, {}):
        hops.clear()
        _, items, _ = stream_of(alice.pack(pack_body(task=QUERY, filters=filters),
                                           path=STREAM))
        spent.append((len(items), len(hops)))
    (one, alone), (many, together) = spent
    assert (one, many >= 10) == (1, True)
    assert together == alone

"""``context_service.client`` against the application: every agent route through the
synchronous and the asynchronous client, answers as the contract's Structs, typed errors,
retries after 429 honouring ``Retry-After``, none after 400.

One service and one seeded workspace for the module (its tests only read it; a pack or replay
they release is their own); the test replacing the rate limiter and hooking its client's
requests does so on an application of its own over that service."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from litestar import Litestar
from litestar.testing import AsyncTestClient, TestClient

from context_service import bootstrap
from context_service.client import (
    AsyncClient,
    Budget,
    Client,
    Forbidden,
    InvalidRequest,
    NotFound,
    PackRequest,
    RateLimited,
    Retry,
    ServiceUnavailable,
    Unauthorized,
)
from context_service.contract import agent as c
from context_service.http.agent.ratelimit import RateLimiter
from tests.api.agent.packs_corpus import FACTS, TASK, VALID
from tests.api.agent.packs_support import module_settings as module_settings  # the fixture
from tests.api.agent_mcp.mcp_support import (
    Workspace,
)
from tests.api.agent_mcp.mcp_support import module_workspace as module_workspace  # the fixture
from tests.api.conftest import Api

pytestmark = [pytest.mark.postgres, pytest.mark.shared_service]
REQUEST = PackRequest(task=TASK, budget=Budget(max_tokens=2000), as_of=c.AsOf(valid_time=VALID))


@pytest.fixture
def own(container: bootstrap.Container) -> Iterator[Api]:
    """An application of the test's own over the module's service (as ``api`` builds one)."""
    with TestClient(app=bootstrap.app(container)) as client:
        yield Api(client)


def _client(workspace: Workspace, bearer: str, **kw: Any) -> Client:
    return Client(token=bearer, http=workspace.api.client, **kw)


def test_every_route_through_the_sync_client(workspace: Workspace) -> None:
    cs = _client(workspace, workspace.runner)
    pack = cs.pack(REQUEST)
    assert isinstance(pack, c.ContextPack) and pack.items and pack.complete
    assert cs.pack(REQUEST) == pack  # the same request at the same position: the same pack
    with cs.stream_pack(REQUEST) as stream:
        items = list(stream)
    assert items == pack.items
    assert stream.header is not None and stream.header.replay_id == pack.replay_id
    assert stream.footer is not None and stream.footer.receipt == pack.receipt
    verified = cs.replay(pack.replay_id, "verify")
    assert isinstance(verified, c.Verification) and verified.matches
    recomputed = cs.replay(pack.replay_id, "recompute", TASK)
    assert isinstance(recomputed, c.Recomputation)
    assert recomputed.pack.pack_id == pack.pack_id
    assert [s.id for s in cs.list_context_sets().items] == ["finance"]
    finance = cs.get_context_set("finance")
    assert isinstance(finance.query_templates, list)
    assert [t.id for t in finance.query_templates] == ["passages"]
    assert cs.lookup_definitions(c.LookupDefinitionsRequest(term="CFO")).items == []
    assert cs.match_verified_answers(
        c.MatchVerifiedAnswersRequest(question="Who is the CFO?")).items == []
    assert cs.list_fields(FACTS).collection_id == FACTS
    counted = cs.query_fields(c.QueryFieldsRequest(collection_id=FACTS, aggregate=c.FieldAggregate(
        functions=[c.FieldFunction(op="count")])))
    assert counted.collection_id == FACTS
    rows = cs.run_query_template(c.RunQueryTemplateRequest(template_id="passages",
                                                           context_set_id="finance"))
    assert rows.row_count == len(rows.rows) > 0


def test_every_route_through_the_async_client(workspace: Workspace,
                                              mcp_app: Litestar) -> None:
    async def run() -> tuple[Any, ...]:
        async with AsyncTestClient(app=mcp_app) as http:
            cs = AsyncClient(token=workspace.runner, http=http)
            pack = await cs.pack(REQUEST)
            items = [item async for item in cs.stream_pack(REQUEST)]
            return (pack, items, await cs.replay(pack.replay_id, "verify"),
                    await cs.list_context_sets(), await cs.get_context_set("finance"),
                    await cs.lookup_definitions(c.LookupDefinitionsRequest(term="CFO")),
                    await cs.match_verified_answers(
                        c.MatchVerifiedAnswersRequest(question="Who is the CFO?")),
                    await cs.list_fields(FACTS),
                    await cs.query_fields(c.QueryFieldsRequest(
                        collection_id=FACTS, aggregate=c.FieldAggregate(
                            functions=[c.FieldFunction(op="count")]))),
                    await cs.run_query_template(c.RunQueryTemplateRequest(
                        template_id="passages", context_set_id="finance")))

    pack, items, verified, sets, finance, _, _, listing, _, rows = asyncio.run(run())
    assert items == pack.items
    assert isinstance(verified, c.Verification) and verified.replay_id == pack.replay_id
    assert sets.items[0].id == finance.id == "finance"
    assert listing.collection_id == FACTS and rows.row_count > 0


def test_errors_are_typed(workspace: Workspace) -> None:
    reader = _client(workspace, workspace.reader)
    with pytest.raises(InvalidRequest) as invalid:
        reader.pack(PackRequest(task=" ", budget=Budget(max_tokens=1)))
    assert invalid.value.code == "VALIDATION_ERROR" and invalid.value.status == 400
    assert invalid.value.details == [
        {"path": "$.task", "message": "must not be blank"},
        {"path": "$.budget.maxTokens", "message": "must be between 256 and 32000"}]
    with pytest.raises(Forbidden) as forbidden:
        reader.run_query_template(c.RunQueryTemplateRequest(template_id="passages"))
    assert forbidden.value.code == "FORBIDDEN"
    with pytest.raises(NotFound) as missing:
        reader.replay("rp_" + "0" * 32, "verify")
    assert missing.value.message == "replay not found"
    with pytest.raises(Unauthorized) as refused:
        _client(workspace, "bdk_0123456789abcdef_" + "A" * 43).list_context_sets()
    assert refused.value.code == "UNAUTHORIZED"


def test_429_is_retried_after_retry_after_and_400_never(workspace: Workspace, own: Api) -> None:
    sent: list[str] = []
    own.client.event_hooks["request"].append(lambda request: sent.append(request.url.path))
    clock = [1000.0]
    own.client.app.state.services.agent.limiter = RateLimiter(
        rate=0.5, burst=1, clock=lambda: clock[0])
    waits: list[float] = []

    def sleep(seconds: float) -> None:  # the service's clock moves as the client waits
        waits.append(seconds)
        clock[0] += seconds

    cs = Client(token=workspace.reader, http=own.client, sleep=sleep)
    assert cs.list_context_sets().items
    assert cs.list_context_sets().items  # refused once (429, Retry-After: 2), then served
    assert waits == [2.0] and len(sent) == 3
    with pytest.raises(InvalidRequest):
        clock[0] += 10
        cs.pack(PackRequest(task=" "))
    assert waits == [2.0] and len(sent) == 4  # a 400 is never tried again
    patient = Client(token=workspace.reader, http=own.client, sleep=sleep,
                     retry=Retry(attempts=1))
    with pytest.raises(RateLimited) as limited:
        patient.list_context_sets()
        patient.list_context_sets()
    assert limited.value.retry_after == 2.0 and waits == [2.0]


def test_an_unreachable_service_is_unavailable() -> None:
    with Client("http://127.0.0.1:9", "bdk_x", retry=Retry(attempts=1)) as cs, \
            pytest.raises(ServiceUnavailable) as failed:
        cs.list_context_sets()
    assert failed.value.status == 0 and failed.value.code == "UNREACHABLE"

"""``context_service.client`` over real HTTP against a served process: every route through the
synchronous and the asynchronous client, each answer read strictly (the contract names every
key the service wrote), the typed errors the service answers, base URLs with and without a
trailing slash or behind a path prefix, and streams left early or cancelled giving their
connection back."""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import msgspec
import pytest

from context_service.client import (
    AsyncClient,
    Client,
    Conflict,
    InvalidRequest,
    NotFound,
    PackRequest,
    Unauthorized,
    routes,
)
from context_service.contract import agent as c
from tests.contextctl.conftest import Cli
from tests.contextctl.test_agent_packs import TASK, facts
from tests.contextctl.test_agent_sets import FINANCE, credential, workspace, write
from tests.e2e.server import ServerProcess

pytestmark = [pytest.mark.e2e, pytest.mark.postgres]
REQUEST = PackRequest(task=TASK, budget=c.Budget(max_tokens=2000),
                      as_of=c.AsOf(valid_time="2025-01-01T00:00:00Z"))
FACTS = "company-facts"
_WORKSPACES = itertools.count()


@pytest.fixture
def token(cli: Cli, service: ServerProcess, tmp_path: Path) -> str:
    """An agent credential of a workspace of the test's own with the facts and the finance
    set."""
    ns = workspace(cli, f"client-review-{next(_WORKSPACES)}")
    facts(service, ns[1])
    made = cli("agent", "sets", "create", write(tmp_path, "finance.json", FINANCE), *ns)
    assert made.code == 0, made.err
    return credential(cli, ns)


def _strict(raw: bytes, typed: Any) -> None:
    """The typed answer written back is the service's answer: no key the contract misses."""
    assert msgspec.to_builtins(typed) == json.loads(raw)


# every route: (path, body, answer type, the typed method's call)
def _routes(replay_id: str) -> list[tuple[str, Any, Any, Callable[[Any], Any]]]:
    lookup = c.LookupDefinitionsRequest(term="ARR", context_set_id="finance")
    match = c.MatchVerifiedAnswersRequest(question="Who is our CFO?", context_set_id="finance")
    counted = c.QueryFieldsRequest(collection_id=FACTS, aggregate=c.FieldAggregate(
        functions=[c.FieldFunction(op="count")]))
    return [
        (routes.replay(replay_id), c.ReplayRequest(mode="verify"), c.Replay,
         lambda cs: cs.replay(replay_id, "verify")),
        (routes.replay(replay_id), c.ReplayRequest(mode="recompute", task=TASK), c.Replay,
         lambda cs: cs.replay(replay_id, "recompute", TASK)),
        (routes.SETS_LIST, c.ListContextSetsRequest(), c.ContextSetList,
         lambda cs: cs.list_context_sets()),
        (routes.SETS_GET, c.GetContextSetRequest(context_set_id="finance"), c.AgentContextSet,
         lambda cs: cs.get_context_set("finance")),
        (routes.LOOKUP, lookup, c.DefinitionMatches, lambda cs: cs.lookup_definitions(lookup)),
        (routes.MATCH, match, c.AnswerMatches, lambda cs: cs.match_verified_answers(match)),
        (routes.FIELDS_LIST, c.ListFieldsRequest(collection_id=FACTS), c.FieldListing,
         lambda cs: cs.list_fields(FACTS)),
        (routes.FIELDS_QUERY, counted, c.FieldAnswer, lambda cs: cs.query_fields(counted)),
    ]


def test_every_route_answers_what_the_contract_names_sync(service: ServerProcess,
                                                          token: str) -> None:
    with Client(service.url + "/", token) as cs:
        pack, raw = cs.exchange(routes.PACKS, REQUEST, c.ContextPack)
        _strict(raw, pack)
        assert pack.items and cs.pack(REQUEST) == pack  # the same request, the same pack
        with cs.stream_pack(REQUEST) as stream:
            assert list(stream) == pack.items
        assert stream.header is not None and stream.header.replay_id == pack.replay_id
        assert stream.footer is not None and stream.footer.receipt == pack.receipt
        lines = cs.call(routes.STREAM, REQUEST).splitlines()
        for line in lines:
            _strict(line, routes.line(line))
        for path, body, answer, typed in _routes(pack.replay_id):
            value, raw = cs.exchange(path, body, answer)
            _strict(raw, value)
            assert typed(cs) == value, path
        assert cs.lookup_definitions(c.LookupDefinitionsRequest(
            term="ARR", context_set_id="finance")).items[0].definition == (
            "Annual recurring revenue.")


def test_every_route_answers_what_the_contract_names_async(service: ServerProcess,
                                                           token: str) -> None:
    async def run() -> None:
        async with AsyncClient(service.url, token) as cs:
            pack, raw = await cs.exchange(routes.PACKS, REQUEST, c.ContextPack)
            _strict(raw, pack)
            assert await cs.pack(REQUEST) == pack
            async with cs.stream_pack(REQUEST) as stream:
                assert [item async for item in stream] == pack.items
            assert stream.footer is not None and stream.footer.receipt == pack.receipt
            for path, body, answer, typed in _routes(pack.replay_id):
                value, raw = await cs.exchange(path, body, answer)
                _strict(raw, value)
                assert await typed(cs) == value, path

    asyncio.run(run())


def test_the_services_errors_are_typed_and_never_carry_the_credential(
        service: ServerProcess, token: str) -> None:
    with Client(service.url, token) as cs:
        pack = cs.pack(REQUEST)
        with pytest.raises(Conflict) as mismatch:
            cs.replay(pack.replay_id, "recompute", "another task")
        assert (mismatch.value.status, mismatch.value.code) == (409,
                                                               "AGENT_REPLAY_TASK_MISMATCH")
        with pytest.raises(InvalidRequest) as invalid:
            cs.query_fields(c.QueryFieldsRequest(collection_id=FACTS))
        assert invalid.value.code == "VALIDATION_ERROR" and invalid.value.details
        with pytest.raises(NotFound) as absent:
            cs.call(routes.API + "/no-such-route", {})
        assert absent.value.code == "NOT_FOUND"
    wrong = token[:-6] + ("A" * 6 if not token.endswith("A" * 6) else "B" * 6)
    with Client(service.url, wrong) as cs, pytest.raises(Unauthorized) as refused:
        cs.list_context_sets()
    said = str(refused.value) + repr(refused.value) + refused.value.message
    assert refused.value.code == "UNAUTHORIZED" and wrong not in said and token not in said


def test_a_base_url_behind_a_path_prefix(service: ServerProcess, token: str) -> None:
    """A gateway serving the service under ``/cs``: the client's routes go below the prefix,
    given with or without its trailing slash."""
    seen: list[str] = []
    upstream = httpx.Client(base_url=service.url, timeout=30)

    def gateway(request: httpx.Request) -> httpx.Response:
        seen.append(request.url.path)
        assert request.url.path.startswith("/cs/")
        sent = {k: v for k, v in request.headers.items() if k.lower() != "host"}
        answer = upstream.post(request.url.path.removeprefix("/cs"), content=request.content,
                               headers=sent)
        return httpx.Response(answer.status_code, content=answer.content,
                              headers=answer.headers)

    try:
        for base in ("http://gateway.example/cs", "http://gateway.example/cs/"):
            http = httpx.Client(base_url=base, transport=httpx.MockTransport(gateway))
            with http:
                assert Client(token=token, http=http).list_context_sets().items
    finally:
        upstream.close()
    assert seen == ["/cs" + routes.SETS_LIST] * 2


def test_a_stream_left_early_gives_its_connection_back(service: ServerProcess,
                                                       token: str) -> None:
    """One connection in the pool: a stream left after its first item, by ``break`` or by its
    context manager, must have given it back for the next request to be sent at all."""
    limits = httpx.Limits(max_connections=1)
    with httpx.Client(base_url=service.url, limits=limits,
                      timeout=httpx.Timeout(30, pool=10)) as http:
        cs = Client(token=token, http=http)
        for item in cs.stream_pack(REQUEST):
            assert item.id
            break
        with cs.stream_pack(REQUEST) as stream:
            next(iter(stream))
        assert cs.list_context_sets().items


def test_an_async_stream_cancelled_or_left_gives_its_connection_back(
        service: ServerProcess, token: str) -> None:
    async def run() -> None:
        limits = httpx.Limits(max_connections=1)
        async with httpx.AsyncClient(base_url=service.url, limits=limits,
                                     timeout=httpx.Timeout(30, pool=10)) as http:
            cs = AsyncClient(token=token, http=http)
            async with cs.stream_pack(REQUEST) as stream:
                async for _ in stream:
                    break
            started = asyncio.Event()

            async def read() -> None:
                async with cs.stream_pack(REQUEST) as held:
                    async for _ in held:
                        started.set()
                        await asyncio.Event().wait()  # held mid-stream until cancelled

            task = asyncio.ensure_future(read())
            await started.wait()
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            assert (await cs.list_context_sets()).items

    asyncio.run(run())


def test_a_credential_read_with_its_line_end_is_refused_unechoed(service: ServerProcess,
                                                                 token: str) -> None:
    """A token read from a file keeps its newline: httpx refused the header quoting it, and
    the client's ``UNREACHABLE`` error (a log line, a traceback) carried the credential."""
    for make in (Client, AsyncClient):
        with pytest.raises(ValueError, match="the token") as refused:
            make(service.url, token + "\n")
        assert token not in str(refused.value) + repr(refused.value)
    with Client(service.url, token.strip()) as cs:
        assert cs.list_context_sets().items

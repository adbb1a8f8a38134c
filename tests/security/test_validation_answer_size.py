"""A refused body costs its own share, not a multiple of it (decision 0059): on every route whose
field rules can fail once per entry of a list or key of an object, a body within the 1 MiB limit
holding nothing but violations answers ``VALIDATION_ERROR`` with the first 100 and one entry
counting the rest, in a few kilobytes, as a short body does. A 937 KiB pack body of invalid
``documentIds`` answered 26 MB and raised the server's peak by 190 MiB.

One service for the module: each test reads or writes a workspace of its own. Sizes and
allocation ratios only, no clock."""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable
from typing import Any

import msgspec
import pytest

from tests.api.agent.fields_support import QUERY, C, seed_of
from tests.api.agent.packs_support import PACKS, STREAM, Agent
from tests.api.agent.packs_support import module_settings as module_settings  # the fixture
from tests.api.agent.templates_namespaced import approve, registered, runner, templates
from tests.api.agent.templates_support import RUN
from tests.api.conftest import Api
from tests.api.namespaced import Namespaced, namespaced
from tests.api.sets_namespaced import credentials

pytestmark = [pytest.mark.postgres, pytest.mark.shared_service]
MAX_BODY = 1024 * 1024
LISTED = 100
DOCUMENT = "must be <collectionId>/<file> or <collectionId>/#<recordId>"


def within_limit(shape: Callable[[int], dict[str, Any]], entry: int) -> tuple[int, bytes]:
    """The largest count ``n`` whose body ``shape(n)`` fits the limit (entries of ``entry``
    bytes each, separator included), and that body."""
    n = (MAX_BODY - len(msgspec.json.encode(shape(0)))) // entry
    raw = msgspec.json.encode(shape(n))
    assert MAX_BODY - entry <= len(raw) <= MAX_BODY, len(raw)
    return n, raw


def refused(resp: Any) -> list[dict[str, str]]:
    assert resp.status_code == 400, resp.text[:300]
    body = resp.json()
    assert (body["code"], body["message"]) == ("VALIDATION_ERROR", "request validation failed")
    details: list[dict[str, str]] = body["details"]
    return details


def assert_bounded(send: Callable[[bytes], Any], shape: Callable[[int], dict[str, Any]],
                   entry: int, total: Callable[[int], int],
                   first: dict[str, str]) -> None:
    """The fullest body lists 100 violations and counts the rest, in an answer the size of a
    body's with a few more violations than the cap, and a 64th of the body's size."""
    n, raw = within_limit(shape, entry)
    full = send(raw)
    details = refused(full)
    assert len(details) == LISTED + 1 and details[0] == first, details[:3]
    assert details[-1] == {"path": "$", "message": f"{total(n) - LISTED} more violations "
                                                    "not listed"}
    small = send(msgspec.json.encode(shape(LISTED + 10)))
    assert len(refused(small)) == LISTED + 1
    assert len(full.content) < 1.05 * len(small.content), (len(full.content), len(small.content))
    # every violation listed made an answer of 8 to 28 times the body
    assert len(full.content) * 64 < len(raw), f"{len(raw)} bytes answered {len(full.content)}"


@pytest.fixture(scope="module")
def own(module_api: Api) -> Namespaced:
    return namespaced(module_api, "acme")


@pytest.fixture(scope="module")
def agent(own: Namespaced) -> Agent:
    """A read credential of a workspace with a collection of studied fields."""
    return seed_of(own)


def _pack(path: str, agent: Agent) -> Callable[[bytes], Any]:
    return lambda raw: agent.post(path, raw=raw)


@pytest.mark.parametrize("path", [PACKS, STREAM])
def test_a_pack_body_of_invalid_document_ids(agent: Agent, path: str) -> None:
    assert_bounded(_pack(path, agent),
                   lambda n: {"task": "t", "filters": {"documentIds": ["x"] * n}}, 4,
                   lambda n: n + 1,  # the list's own length, then each entry
                   {"path": "$.filters.documentIds", "message": "must have at most 20 entries"})


def test_a_pack_body_of_invalid_sources(agent: Agent) -> None:
    assert_bounded(_pack(PACKS, agent),
                   lambda n: {"task": "t", "filters": {"sources": ["x"] * n}}, 4, lambda n: n,
                   {"path": "$.filters.sources[0]",
                    "message": "must be passages, graph or documents"})


def test_a_pack_body_of_empty_collection_ids(agent: Agent) -> None:
    assert_bounded(_pack(PACKS, agent),
                   lambda n: {"task": "t", "filters": {"collectionIds": [""] * n}}, 3,
                   lambda n: n + 1,
                   {"path": "$.filters.collectionIds", "message": "must have at most 8 entries"})


def test_a_credential_body_of_invalid_scopes(agent: Agent, own: Namespaced) -> None:
    alice = own.as_("user:alice")
    assert_bounded(lambda raw: alice.post(credentials(own), raw=raw),
                   lambda n: {"name": "n", "expiresInDays": 1, "scopes": ["x"] * n}, 4,
                   lambda n: n,
                   {"path": "$.scopes[0]", "message": "must be context:read or queries:run"})


def test_a_template_run_of_unknown_parameters(agent: Agent, own: Namespaced) -> None:
    registered(own, "one", "SELECT :x AS x", [{"name": "x", "type": "number"}])
    approve(own, ["one"], "answers", collections=(C,))
    run = runner(own)

    def keys(n: int) -> dict[str, Any]:
        return {"templateId": "one", "contextSetId": "answers",
                "parameters": {f"{i:05x}": 0 for i in range(n)}}

    assert_bounded(lambda raw: run.post(RUN, raw=raw), keys, len('"00000":0,'), lambda n: n,
                   {"path": "$.parameters.00000",
                    "message": "is not a parameter of this template"})


def test_a_fields_query_of_long_unknown_names(agent: Agent) -> None:
    names = [chr(ord("a") + i) * (MAX_BODY // 7) for i in range(6)]
    raw = msgspec.json.encode({"collectionId": C, "fields": names})
    resp = agent.post(QUERY, raw=raw)
    assert [d["message"] for d in refused(resp)] == [
        f'unknown field "{name[:64]}\u2026"' for name in names]
    # each name was shown back whole: an answer as large as the body
    assert len(resp.content) * 64 < len(raw), len(resp.content)


def test_an_unknown_key_of_a_mebibyte_is_cut(agent: Agent) -> None:
    key = "k" * (MAX_BODY - 100)
    resp = agent.post(PACKS, raw=msgspec.json.encode({"task": "t", key: 1}))
    assert resp.status_code == 400
    assert resp.json() == {"code": "INVALID_REQUEST",
                           "message": f'unknown field "{"k" * 64}\u2026" at $'}


def _peak(send: Callable[[], Any]) -> int:
    tracemalloc.start()
    try:
        send()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_refusing_the_violations_costs_about_what_decoding_the_body_does(agent: Agent) -> None:
    """The same quarter of a million invalid ids, refused once for a key after them (so every
    entry is decoded, and nothing listed) and once by the field rules."""
    n, raw = within_limit(lambda n: {"task": "t", "filters": {"documentIds": ["x"] * n}}, 4)
    undecodable = msgspec.json.encode(
        {"task": "t", "filters": {"documentIds": ["x"] * (n - 4), "unknown": 1}})
    agent.post(PACKS, raw=undecodable)  # the route's first call loads what every call uses
    decoded = _peak(lambda: agent.post(PACKS, raw=undecodable))
    ruled = _peak(lambda: refused(agent.post(PACKS, raw=raw)))
    # every violation kept and answered raised the peak about sevenfold
    assert ruled < 2 * decoded, f"the field rules' peak {ruled}, decoding's {decoded}"


# --- /v1: one bare message, its key and path cut ------------------------------------------------

def test_a_v1_unknown_key_of_a_mebibyte_is_cut(own: Namespaced) -> None:
    key = "k" * (MAX_BODY - 100)
    resp = own.as_("user:alice").post("/v1/contexts", raw=msgspec.json.encode({key: 1}))
    assert resp.status_code == 400
    assert resp.json() == {"error": "invalid_request",
                           "message": f'object contains unknown field "{"k" * 64}\u2026"'}


def _nested_default(value: str) -> bytes:
    """A template whose parameter default nests 800 objects under keys of 1,200 characters."""
    key = "k" * 1200
    default: Any = value
    for _ in range(800):
        default = {key: default}
    return msgspec.json.encode({"id": "nul", "description": "d", "sql": "SELECT :x AS x",
                                "parameters": [{"name": "x", "type": "text",
                                                "default": default}]})


def test_a_nul_under_long_nested_keys_costs_about_what_decoding_does(own: Namespaced) -> None:
    """The U+0000 walk of a ``/v1`` body wrote the path of every level, each holding every key
    above it: a 941 KiB body held 369 MiB of paths, and the answer named all 800 keys."""
    alice = own.as_("user:alice")
    with_nul, without = _nested_default("a\x00"), _nested_default("a")
    assert len(with_nul) < MAX_BODY
    resp: list[Any] = []
    walked = _peak(lambda: resp.append(alice.post(templates(own), raw=with_nul)))
    decoded = _peak(lambda: alice.post(templates(own), raw=without))
    assert resp[0].status_code == 400
    path = "$.parameters[0].default" + ("." + "k" * 64 + "\u2026") * 800
    assert resp[0].json() == {"error": "invalid_request",
                              "message": f'strings cannot contain U+0000 at "{path[:200]}\u2026"'}
    assert walked < 3 * decoded, f"the walk's peak {walked}, decoding's {decoded}"

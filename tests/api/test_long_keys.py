"""Values without a length limit that the read model keys (spec 5.1, agent-context-api 5.2):
a btree entry cannot exceed about 2,700 bytes, so a long value under a plain index made the
projection writing it fail and retry for ever, and every view it feeds stalled for the whole
service. Each case publishes a long value (ASCII and multi-byte) through the API and checks that
the view still answers: the long-valued record is found, and the others are still served."""

from __future__ import annotations

import random
import string
from typing import Any

import pytest

from tests.api.agent.fields_support import LIST, QUERY, REV1, C, field
from tests.api.agent.packs_support import Agent, create_context, publish, record
from tests.api.conftest import Api
from tests.api.namespaced import Namespaced, namespaced
from tests.api.sets_namespaced import seed_workspace as seed_namespaced
from tests.api.sets_namespaced import token as namespaced_token
from tests.api.test_query import create, digest, hits, publish_index, publish_revision, query
from tests.api.test_query import record as query_record

# one service for the module: every test works in a namespace of its own (``api.ns``)
pytestmark = [pytest.mark.postgres, pytest.mark.shared_service]



def _word(length: int, seed: int, alphabet: str) -> str:
    """``length`` characters that do not compress (PostgreSQL compresses a long index entry,
    so a repetitive value would fit where a hash, a blob or a path of ids does not)."""
    rnd = random.Random(seed)
    return "".join(rnd.choice(alphabet) for _ in range(length))


LONG_ASCII = _word(3000, 1, string.ascii_letters + string.digits + "/-_.")  # 3,000 bytes
LONG_MULTIBYTE = _word(1500, 2, "αβγδεζηθικλμνξοπρστυφχψωабвгдежзий中文字")  # ~3,100 bytes


@pytest.fixture
def api(api: Api) -> Namespaced:
    """The module's client over a namespace of the test's own."""
    return namespaced(api)


def _indexed(api: Namespaced, name: str, records: list[dict[str, Any]]) -> str:
    create(api, name)
    revision = digest(name)
    publish_revision(api, name, revision)
    publish_index(api, name, revision, [{**r, "revision": revision} for r in records])
    return revision


def _rec(id_: str, context: str, text: str, source: str = "", **fields: Any) -> dict[str, Any]:
    return query_record(id_, context, "", text,
                        source={"context": source, "type": "", "revision": ""}, **fields)


def test_a_long_record_id_or_source_context_is_indexed_and_filtered(api: Namespaced) -> None:
    """Record ids and source contexts are free strings: the records index keys them whatever
    their length, and the exact filters still find them (and only them)."""
    _indexed(api, "notes", [
        _rec(LONG_ASCII, "notes", "alpha one", source=LONG_MULTIBYTE),
        _rec(LONG_MULTIBYTE, "notes", "alpha two", source="plain"),
        _rec("short", "notes", "alpha three", source=LONG_ASCII),
        _rec(LONG_ASCII[:-1], "notes", "alpha four", source=LONG_MULTIBYTE[:-1]),
    ])
    assert hits(query(api, {"query": "alpha"})) == [
        (1, "notes", i) for i in sorted([LONG_ASCII, LONG_MULTIBYTE, "short", LONG_ASCII[:-1]])]
    assert hits(query(api, {"ids": [LONG_ASCII]})) == [(1, "notes", LONG_ASCII)]
    assert hits(query(api, {"ids": [LONG_MULTIBYTE, "short"], "query": "alpha"})) == [
        (1, "notes", "short"), (1, "notes", LONG_MULTIBYTE)]  # code-point order
    assert hits(query(api, {"query": "alpha", "sourceContexts": [LONG_MULTIBYTE]})) == [
        (1, "notes", LONG_ASCII)]
    assert hits(query(api, {"ids": ["short", LONG_ASCII],
                            "sourceContexts": [LONG_ASCII]})) == [(1, "notes", "short")]
    assert hits(query(api, {"ids": [LONG_ASCII + "x"]})) == []
    # the index keeps serving: a context published afterwards is found
    _indexed(api, "later", [_rec("b", "later", "beta")])
    assert hits(query(api, {"query": "beta"})) == [(1, "later", "b")]


# --- documents and studied fields (agent-context-api 5.2, 10) ---------------------------------

LONG_FILE = "docs/" + LONG_MULTIBYTE + ".pdf"
# a text field value is at most 1,000 characters: up to 3,000 bytes here, 4,000 with emoji
LONG_TEXT = _word(1000, 3, "中文字漢語かなカナ한국어")
LONG_TEXT_2 = LONG_TEXT[:-1] + "字"  # shares a 2,997-byte prefix with LONG_TEXT


def _fields_query(agent: Agent, filters: list[dict[str, Any]]) -> list[tuple[str, Any]]:
    response = agent.post(QUERY, {"collectionId": C, "fields": ["region"], "filters": filters})
    assert response.status_code == 200, response.text
    return [(row["documentId"], row["values"][0]["value"]) for row in response.json()["rows"]]


def test_long_document_ids_and_text_values_are_studied(api: Namespaced) -> None:
    """A long ``file``, a long record id (a document of its own) and a text field of 1,000
    multi-byte characters reach the documents and studied-field tables; the field routes still
    answer, filter and order them exactly."""
    seed_namespaced(api)
    create_context(api, C, ws=api.ns)
    publish(api, C, REV1, [
        record("p1", C, REV1, "First part.", file=LONG_FILE,
               fields=[field("region", "text", LONG_TEXT)]),
        record("p2", C, REV1, "Second part.", file=LONG_FILE),
        record(LONG_ASCII, C, REV1, "On its own.", fields=[field("region", "text", LONG_TEXT_2)]),
        record("short", C, REV1, "Ordinary.", file="a.pdf",
               fields=[field("region", "text", "EMEA")]),
    ], ws=api.ns)
    agent = Agent(api, namespaced_token(api))
    by_file, by_id = f"{C}/{LONG_FILE}", f"{C}/#{LONG_ASCII}"
    assert sorted(_fields_query(agent, [])) == sorted(
        [(by_file, LONG_TEXT), (by_id, LONG_TEXT_2), (f"{C}/a.pdf", "EMEA")])
    eq = {"field": "region", "op": "eq"}
    assert _fields_query(agent, [{**eq, "value": LONG_TEXT}]) == [(by_file, LONG_TEXT)]
    assert _fields_query(agent, [{**eq, "value": LONG_TEXT_2}]) == [(by_id, LONG_TEXT_2)]
    assert _fields_query(agent, [{**eq, "value": "EMEA"}]) == [(f"{C}/a.pdf", "EMEA")]
    ne = {"field": "region", "op": "ne", "value": LONG_TEXT}
    assert sorted(_fields_query(agent, [ne])) == sorted(
        [(f"{C}/a.pdf", "EMEA"), (by_id, LONG_TEXT_2)])
    assert sorted(_fields_query(agent, [{"field": "region", "op": "prefix",
                                         "value": LONG_TEXT[:-1]}])) == sorted(
        [(by_file, LONG_TEXT), (by_id, LONG_TEXT_2)])
    assert _fields_query(agent, [{"field": "region", "op": "prefix",
                                  "value": LONG_TEXT_2[-600:]}]) == []
    listed = agent.post(LIST, {"collectionId": C})
    assert listed.status_code == 200, listed.text

"""Property: for random indexes and random queries, the service (through HTTP, over real
PostgreSQL) answers exactly what the in-test reference of spec 5.2 computes over the same
records, page by page when following ``nextCursor`` to the end."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from tests.api.conftest import Api
from tests.api.test_query import create, digest, publish_index, publish_revision, query, record
from tests.support.hypothesis_profiles import scaled
from tests.unit.test_query_reference import reference_search

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

NAMES = ("ka", "kb", "kc", "kd")
WORDS = ("release", "Release", "schedule", "notes", "v2", "Straße", "STRASSE", "东京", "x²y",
         "plan", "a_b", "naïve")
SOURCES = ("", "s1", "s2")

words = st.lists(st.sampled_from(WORDS), max_size=6).map(" - ".join)
some_words = st.lists(st.sampled_from(WORDS), min_size=1, max_size=8).map(" ".join)
texts = st.one_of(some_words, some_words.map(lambda w: f"{w}, {w}!"), st.text(max_size=12))
records = st.fixed_dictionaries({
    "id": st.sampled_from(("a", "b", "B", "a1", "é", "z")),
    "title": words,
    "text": texts.map(lambda t: t if t.strip() else t + "text"),
    "keywords": st.lists(words, max_size=3),
    "source": st.sampled_from(SOURCES),
})
contexts = st.fixed_dictionaries({
    "type": st.sampled_from(("memory", "knowledge", "memory", "state")),
    "records": st.lists(records, min_size=1, max_size=9),
    "index": st.sampled_from(("current", "current", "current", "stale", "none")),
})
worlds = st.dictionaries(st.sampled_from(NAMES), contexts, min_size=1, max_size=4)
def _sometimes(values: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """A filter that is usually absent, so most queries still find something."""
    return st.one_of(st.none(), st.none(), st.none(), values)


@st.composite
def queries(draw: st.DrawFn) -> dict[str, Any]:
    body: dict[str, Any] = {"query": draw(st.one_of(
        some_words.map(lambda w: " ".join(w.split()[:3])),
        st.sampled_from(("release release", "?!", " ", ""))))}
    optional = {
        "ids": st.lists(st.sampled_from(("a", "b", "B", "é", "q")), min_size=1, max_size=3),
        "types": st.lists(st.sampled_from(("memory", "knowledge", "state")), min_size=1,
                          max_size=2),
        "sourceContexts": st.lists(st.sampled_from(SOURCES), min_size=1, max_size=2),
        "contexts": st.lists(st.sampled_from(NAMES), min_size=1, max_size=3),
        "revisions": st.lists(st.sampled_from(NAMES), min_size=1, max_size=2),
    }
    for key, values in optional.items():
        value = draw(_sometimes(values))
        if value is not None:
            body[key] = value
    limit = draw(st.one_of(st.none(), st.integers(1, 4)))
    if limit is not None:
        body["limit"] = limit
    return body


def _wire(context: str, type_: str, revision: str, spec: dict[str, Any]) -> dict[str, Any]:
    source = {"context": spec["source"], "type": "state" if spec["source"] else "",
              "revision": digest(spec["source"]) if spec["source"] else ""}
    return record(spec["id"], context, revision, spec["text"], type_, title=spec["title"],
                  keywords=spec["keywords"], source=source)


def _build(api: Api, namespace: str, world: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """Create the contexts; return the searchable records per usable context."""
    usable: dict[str, list[dict[str, Any]]] = {}
    for name, spec in world.items():
        create(api, name, spec["type"], namespace)
        revision = digest(name)
        publish_revision(api, name, revision, namespace)
        wire = [_wire(name, spec["type"], revision, r) for r in spec["records"]]
        if spec["type"] == "state" or spec["index"] == "none":
            continue
        publish_index(api, name, revision, wire, namespace)
        if spec["index"] == "stale":
            publish_revision(api, name, digest(name + "/next"), namespace)
        else:
            usable[name] = wire
    return usable


def _expected(world: dict[str, Any], usable: dict[str, list[dict[str, Any]]],
              body: dict[str, Any]) -> tuple[list[tuple[int, Any]], list[str]]:
    named = list(dict.fromkeys(body.get("contexts", []))) or list(world)
    searchable = sorted(n for n in named if world[n]["type"] != "state")
    candidates = [r for n in searchable if n in usable for r in usable[n]]
    found = reference_search(candidates, body.get("query", ""), body.get("types", ()),
                             body.get("sourceContexts", ()), body.get("revisions", ()),
                             body.get("ids", ()))
    return found, [n for n in searchable if n not in usable]


def _pages(api: Api, namespace: str, body: dict[str, Any]) -> list[dict[str, Any]]:
    pages: list[dict[str, Any]] = []
    request = dict(body)
    while True:
        response = query(api, request, namespace)
        assert response.status_code == 200, response.text
        pages.append(response.json())
        if "nextCursor" not in pages[-1]:
            return pages
        request = {**body, "cursor": pages[-1]["nextCursor"]}


@settings(max_examples=scaled(150), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(world=worlds, body=queries())
def test_service_answers_like_the_reference(api: Api, world: dict[str, Any],
                                            body: dict[str, Any]) -> None:
    namespace = "p" + uuid.uuid4().hex[:12]
    body = {k: v for k, v in body.items() if k != "contexts" or all(n in world for n in v)}
    if "revisions" in body:
        body["revisions"] = [digest(r) for r in body["revisions"]]
    usable = _build(api, namespace, world)
    if not body.get("query", "").strip() and not body.get("ids"):
        assert query(api, body, namespace).json()["message"].endswith("query or ids is required")
        return
    expected, unavailable = _expected(world, usable, body)
    pages = _pages(api, namespace, body)
    event(f"results: {min(len(expected), 10)}, pages: {min(len(pages), 4)}")
    got = [(item["score"], item["record"]) for page in pages for item in page["items"]]
    assert got == expected
    limit = body.get("limit", 20)
    assert [len(p["items"]) for p in pages[:-1]] == [limit] * (len(pages) - 1)
    assert 0 < len(pages[-1]["items"]) <= limit or not expected
    for page in pages:
        assert page.get("unavailable", []) == unavailable

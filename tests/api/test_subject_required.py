"""Spec 8.3: ``CS_REQUIRE_SUBJECT``, a setting of the whole service, so each test builds a
service of its own with it (the rest of the subject rules: test_subject.py)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import pytest
from litestar.testing import TestClient

from context_service import bootstrap
from context_service.config import Settings
from tests.api.conftest import Api, context_body, each
from tests.api.test_subject import assert_malformed, context_routes

CTX = "/v1/namespaces/team1/contexts/research-memory"
UNAUTHENTICATED = '{"error":"unauthenticated","message":"X-Context-Subject is required"}'


@pytest.fixture
def strict_api(settings: Settings, database_url: str) -> Iterator[Api]:
    built = bootstrap.build(dataclasses.replace(settings, require_subject=True),
                            url=database_url, pool_size=4)
    built.start_workers()
    try:
        with TestClient(app=bootstrap.app(built)) as client:
            yield Api(client)
    finally:
        built.close()


def test_require_subject_answers_401_on_every_context_route(strict_api: Api) -> None:
    owner = strict_api.as_("user:alice")
    assert owner.post("/v1/contexts", context_body()).status_code == 201

    def probe(route: tuple[str, str, Any]) -> None:
        for header in (None, "", "   "):
            resp = strict_api.as_(header).request(route[0], route[1], route[2])
            assert resp.status_code == 401, (header, resp.text)
            assert resp.headers["content-type"] == "application/json"
            assert resp.text == UNAUTHENTICATED

    each(context_routes("team1"), probe)
    assert owner.get(CTX).status_code == 200


def test_require_subject_still_checks_the_subject_first(strict_api: Api) -> None:
    resp = strict_api.as_(None).post("/v1/contexts", raw=b"")
    assert resp.status_code == 401
    assert resp.text == UNAUTHENTICATED
    assert_malformed(strict_api.as_("nobody").post("/v1/contexts", context_body()))


def test_require_subject_accepts_a_subject_and_ignores_health(strict_api: Api) -> None:
    resp = strict_api.as_("agent:summarizer").post("/v1/contexts", context_body())
    assert resp.status_code == 201
    listed = strict_api.as_("agent:summarizer").get("/v1/namespaces/team1/contexts").json()
    assert [c["name"] for c in listed["items"]] == ["research-memory"]
    assert strict_api.as_(None).get("/healthz").status_code == 200
    assert strict_api.as_(None).get("/v1/sandbox-pools").status_code == 200
    assert strict_api.as_(None).get("/no/such/route").status_code == 404

"""``/healthz`` is liveness; ``/readyz`` checks the database and its schema version, answering
503 in the error body when the service cannot serve, and both are in the OpenAPI document. The
tests that only read share one service; the one writing a migration of the future into the
database keeps a fresh one (the service is not ready after it)."""

from __future__ import annotations

import psycopg
import pytest

from tests.api.conftest import Api, expect

pytestmark = pytest.mark.postgres
shared = pytest.mark.shared_service  # reads only


@shared
def test_ready_when_the_database_answers_with_this_codes_schema(api: Api) -> None:
    expect(api.get("/readyz"), 200, {"status": "ready"})
    expect(api.get("/healthz"), 200, {"status": "ok"})


def test_not_ready_when_the_schema_is_not_this_codes(api: Api, database_url: str) -> None:
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute("INSERT INTO schema_migrations (name) VALUES ('0999_future.sql')")
    expect(api.get("/readyz"), 503, {
        "error": "unavailable",
        "message": "not ready: the database schema is newer than this version of "
                   "context-service: it has migrations this version does not know "
                   "(0999_future.sql); run a version that includes them"})
    expect(api.get("/healthz"), 200, {"status": "ok"})  # alive all the same


@shared
def test_probes_are_documented(api: Api) -> None:
    paths = api.get("/schema/openapi.json").json()["paths"]
    ready = paths["/readyz"]["get"]
    assert ready["responses"]["200"]["description"] == "success"
    assert ready["responses"]["503"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/Error"}
    assert "get" in paths["/healthz"]

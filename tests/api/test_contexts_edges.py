"""Edges of named contexts (spec 1.5 to 1.11, 3.4; the history routes of docs/api.md): a grant
revoked by another replica of the service hides every read of this one at once, a name reused by
someone else does not open the previous context's past, and a history page stays bounded.

One service for the module: each test's context lives in a namespace of its own."""

from __future__ import annotations

from typing import Any

import pytest

from context_service import bootstrap
from context_service.adapters.eventstore.application import ContextApplication
from context_service.domain.context.commands import RevokeAccess
from context_service.domain.events import Subject
from tests.api.conftest import Api, expect
from tests.api.namespaced import Namespaced, namespaced
from tests.support.api_helpers import ADMIN, grant

pytestmark = [pytest.mark.postgres, pytest.mark.shared_service]
ALICE = Subject("user", "alice")
NOT_FOUND = {"error": "not_found", "message": "context resource not found"}
NAME = "research-memory"


@pytest.fixture
def ctx(api: Api) -> Namespaced:
    """``research-memory`` in a namespace of the test's own, owned by ``user:alice``."""
    alice = namespaced(api).as_("user:alice")
    created = alice.post("/v1/contexts", alice.context_body())
    assert created.status_code == 201, created.text
    return alice


def position(resp: Any) -> int:
    return int(resp.headers["x-context-position"])


def revision(ctx: Namespaced, digit: str, **extra: Any) -> Any:
    body = {"id": digit * 64, "createdAt": "2026-01-01T00:00:00Z", "operation": "sync", **extra}
    resp = ctx.post(ctx.context + "/revisions", body)
    assert resp.status_code == 201, resp.text
    return resp


def test_a_grant_revoked_by_another_replica_hides_every_read_here(
        ctx: Namespaced, container: bootstrap.Container) -> None:
    """This process's write model saw bob's grant; the revocation is recorded by another
    replica over the same log, so it never passes through this process's cache."""
    bob = ctx.as_("user:bob")
    granted = grant(ctx, "user:bob", "read", "write", "administer", path=ctx.context)
    point = position(granted)
    reads = [ctx.context, ctx.context + "/grants", ctx.context + "/consumers",
             ctx.context + "/revisions", ctx.context + "/audit", ctx.context + "/audit?limit=1",
             ctx.context + "/history", ctx.context + f"?asOfPosition={point}",
             ctx.context + f"/grants?asOfPosition={point}"]
    for path in reads:
        assert bob.get(path).status_code == 200, path
    restore = ctx.context + "/restore"
    assert bob.post(restore, {"snapshot": "nightly"}).status_code == 501
    ContextApplication(container.store).execute(
        ctx.ns, NAME, RevokeAccess(actor=ALICE, subject=Subject("user", "bob")))
    for path in reads:
        expect(bob.get(path), 404, NOT_FOUND)
    expect(bob.post(restore, {"snapshot": "nightly"}), 404, NOT_FOUND)
    listed = bob.get(ctx.contexts + f"?asOfPosition={point}")
    assert listed.json() == {"items": []}
    assert ctx.get(ctx.context + "/grants").status_code == 200  # alice keeps her access


def test_a_reused_name_does_not_open_the_previous_context_as_of_the_past(
        ctx: Namespaced) -> None:
    """Alice's context is deleted and mallory creates one of the same name: mallory holds every
    permission on hers, none on alice's, whose past stays hidden from her."""
    before = position(grant(ctx, "agent:summarizer", "read", path=ctx.context))
    revision(ctx, "a", parameters={"secret": "alice's"})
    assert ctx.delete(ctx.context).status_code == 204
    mallory = ctx.as_("user:mallory")
    assert mallory.post("/v1/contexts", mallory.context_body()).status_code == 201
    for path in (ctx.context + f"?asOfPosition={before}",
                 ctx.context + f"/grants?asOfPosition={before}",
                 ctx.context + "?asOf=2000-01-01T00:00:00Z"):
        expect(mallory.get(path), 404, NOT_FOUND)
    assert mallory.get(ctx.contexts + f"?asOfPosition={before}").json() == {"items": []}
    # her own context as of now, and the bootstrap administrator's view of alice's past
    assert mallory.get(ctx.context + "?asOf=2999-01-01T00:00:00Z").status_code == 200
    listed = mallory.get(ctx.contexts + "?asOf=2999-01-01T00:00:00Z").json()["items"]
    assert [c["name"] for c in listed] == [NAME]
    admin = ctx.as_(ADMIN)
    past = admin.get(ctx.context + f"/grants?asOfPosition={before}").json()["items"]
    assert [g["subject"]["name"] for g in past] == ["summarizer", "alice"]


def test_a_history_page_without_limit_stays_bounded_and_pages_on(ctx: Namespaced) -> None:
    """Six revisions of about 900 KB each: one answer holding them all would be over 5 MB;
    pages stop after a few MiB and hand on a cursor, and together hold every event once."""
    big = "x" * 900_000
    for digit in "abcdef":
        revision(ctx, digit, parameters={"blob": big})
    path = ctx.context + "/history"
    seen: list[int] = []
    pages = 0
    resp = ctx.get(path)
    while True:
        assert resp.status_code == 200, resp.text
        assert len(resp.content) < 5_000_000
        body = resp.json()
        seen += [item["position"] for item in body["items"]]
        pages += 1
        if "nextCursor" not in body:
            break
        resp = ctx.get(path + "?cursor=" + body["nextCursor"])
    assert pages > 1
    assert len(seen) == 7 and seen == sorted(set(seen))  # the create and six revisions
    limited = ctx.get(path + "?limit=2").json()
    assert [i["position"] for i in limited["items"]] == seen[:2]
    assert "nextCursor" in limited

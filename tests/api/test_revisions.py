"""Spec 1.6 and 2.5: publishing and listing context revisions."""

from __future__ import annotations

from typing import Any

import pytest

from tests.api.conftest import Api, each, expect
from tests.api.namespaced import Namespaced, namespaced
from tests.support.api_helpers import grant

# one service for the module: every test's context lives in a namespace of its own
pytestmark = pytest.mark.shared_service
A, B, C = "a" * 64, "b" * 64, "0123456789abcdef" * 4
NOT_FOUND = {"error": "not_found", "message": "context resource not found"}


def revision(id_: str = A, **extra: Any) -> dict[str, Any]:
    return {"id": id_, "createdAt": "2026-05-01T10:11:12Z", "operation": "sync", **extra}


def invalid(message: str) -> dict[str, str]:
    return {"error": "invalid_request", "message": message}


def revisions(api: Namespaced) -> str:
    """The path of the revisions of ``api``'s ``research-memory``."""
    return api.context + "/revisions"


@pytest.fixture
def api(api: Api) -> Namespaced:
    """The module's client over a namespace of the test's own."""
    return namespaced(api)


@pytest.fixture
def ctx(api: Namespaced) -> Namespaced:
    """``api`` with the namespace's ``research-memory`` created."""
    assert api.post("/v1/contexts", api.context_body()).status_code == 201
    return api


def test_publish_answers_the_resource_with_its_history(ctx: Namespaced) -> None:
    resp = ctx.post(revisions(ctx), revision())
    assert resp.status_code == 201
    assert resp.headers["content-type"] == "application/json"
    assert resp.text == (
        '{"name":"research-memory","namespace":"' + ctx.ns + '","type":"memory",'
        '"status":"provisioning",'
        '"storage":{"backend":"pvc","size":"5Gi","accessMode":"ReadWriteMany",'
        '"storageClass":"ibm-scale-csi"},"attachment":{"kind":"pvc",'
        '"claimName":"context-research-memory"},"currentRevision":"' + A + '",'
        '"revisions":[{"id":"' + A + '","createdAt":"2026-05-01T10:11:12Z","operation":"sync",'
        '"files":0,"bytes":0}]}')


def test_full_revision_is_rendered_in_key_order(ctx: Namespaced) -> None:
    full = {"id": B, "createdAt": "2026-05-01T10:11:12.5Z", "operation": "transform",
            "producer": "contextctl/1.2", "parameters": {"model": "m1", "chunk": "512"},
            "sources": [{"context": "raw-notes", "type": "workspace", "revision": C},
                        {"context": "facts", "type": "memory", "revision": A}],
            "files": 12, "bytes": 4096}
    resp = ctx.post(revisions(ctx), full)
    assert resp.status_code == 201
    listed = ctx.get(revisions(ctx))
    assert listed.json() == {"items": [full]}
    assert list(listed.json()["items"][0]) == list(full)
    assert list(listed.json()["items"][0]["sources"][0]) == ["context", "type", "revision"]


def test_files_and_bytes_are_not_range_checked(ctx: Namespaced) -> None:
    resp = ctx.post(revisions(ctx), revision(files=-1, bytes=2**62, producer="", parameters={}))
    assert resp.status_code == 201
    item = ctx.get(revisions(ctx)).json()["items"][0]
    assert (item["files"], item["bytes"]) == (-1, 2**62)
    assert "producer" not in item and "parameters" not in item and "sources" not in item


def test_created_at_is_normalised_to_utc(ctx: Namespaced) -> None:
    cases = [
        ("2026-05-01T12:11:12.120000+02:00", "2026-05-01T10:11:12.12Z"),
        ("2026-05-01T10:11:12.1234567Z", "2026-05-01T10:11:12.123456Z"),
        ("2026-05-01T10:11:12.000Z", "2026-05-01T10:11:12Z"),
        ("2026-05-01T10:11:12.000001Z", "2026-05-01T10:11:12.000001Z"),
        ("2026-05-01T10:11:12-05:30", "2026-05-01T15:41:12Z"),
        ("2026-12-31T23:30:00-01:00", "2027-01-01T00:30:00Z"),
        ("2026-05-01T10:11:12.9999999+00:00", "2026-05-01T10:11:12.999999Z"),
    ]
    ids = [f"{i:064x}" for i in range(1, len(cases) + 1)]
    for id_, (sent, _) in zip(ids, cases, strict=True):
        assert ctx.post(revisions(ctx), {**revision(id_), "createdAt": sent}).status_code == 201
    got = [r["createdAt"] for r in ctx.get(revisions(ctx)).json()["items"]]
    assert got == [echoed for _, echoed in cases]


def test_created_at_must_be_rfc3339_with_a_zone(ctx: Namespaced) -> None:
    bad = ["2026-05-01T10:11:12", "2026-05-01", "yesterday", "", "2026-13-01T10:11:12Z",
           "2026-05-01 10:11:12Z ", "2026-05-01T25:11:12Z", "1714558272"]

    def probe(value: str) -> None:
        resp = ctx.post(revisions(ctx), {**revision(), "createdAt": value})
        assert resp.status_code == 400, resp.text
        assert resp.json()["error"] == "invalid_request"
        assert resp.json()["message"] != "revision creation time is required"

    each(bad, probe)
    resp = ctx.post(revisions(ctx), {**revision(), "createdAt": 1714558272})
    assert resp.status_code == 400
    assert ctx.get(revisions(ctx)).json() == {"items": []}


def test_validation_messages_in_order(ctx: Namespaced) -> None:
    no_id = invalid("revision id must be a lowercase SHA-256 digest")
    steps: list[tuple[dict[str, Any], dict[str, str]]] = [
        ({}, no_id),
        ({"createdAt": None, "operation": " ", "sources": [{}]}, no_id),
        ({"id": A.upper()}, no_id),
        ({"id": A[:63]}, no_id),
        ({"id": A + "a"}, no_id),
        ({"id": "g" * 64}, no_id),
        ({"id": "sha256:" + A[7:]}, no_id),
        ({"id": A, "operation": " ", "sources": [{}]},
         invalid("revision creation time is required")),
        ({"id": A, "createdAt": None}, invalid("revision creation time is required")),
        ({**revision(), "operation": None, "sources": [{}]},
         invalid("revision operation is required")),
        ({**revision(), "operation": " \t"}, invalid("revision operation is required")),
        ({**revision(), "sources": [{"type": "memory", "revision": "x"}]},
         invalid("revision sources require context and type")),
        ({**revision(), "sources": [{"context": "c", "type": "", "revision": B}]},
         invalid("revision sources require context and type")),
        ({**revision(), "sources": [{"context": "c", "type": "t", "revision": B.upper()}]},
         invalid("source revision must be a lowercase SHA-256 digest")),
        ({**revision(), "sources": [{"context": "c", "type": "t"}]},
         invalid("source revision must be a lowercase SHA-256 digest")),
        ({**revision(), "sources": [{"context": "c", "type": "t", "revision": B},
                                    {"context": "d", "type": "t"}]},
         invalid("source revision must be a lowercase SHA-256 digest")),
    ]
    each(steps, lambda step: expect(ctx.post(revisions(ctx), step[0]), 400, step[1]))
    assert ctx.get(revisions(ctx)).json() == {"items": []}


def test_unknown_fields_are_rejected(ctx: Namespaced) -> None:
    for body in ({**revision(), "current": True},
                 {**revision(), "sources": [{"context": "c", "type": "t", "revision": B,
                                             "extra": 1}]},
                 {**revision(), "parameters": {"a": 1}}):
        resp = ctx.post(revisions(ctx), body)
        assert resp.status_code == 400, body
        assert resp.json()["error"] == "invalid_request"


def test_validation_answers_before_authorization(api: Namespaced) -> None:
    assert api.as_("user:alice").post("/v1/contexts", api.context_body()).status_code == 201
    bad = {"id": "nope", "createdAt": "2026-05-01T10:11:12Z", "operation": "sync"}
    message = invalid("revision id must be a lowercase SHA-256 digest")
    expect(api.as_("user:bob").post(revisions(api), bad), 400, message)
    expect(api.post(api.contexts + "/absent/revisions", bad), 400, message)
    expect(api.post(api.contexts + "/absent/revisions", raw=b""), 400,
           invalid("request body is required"))
    expect(api.as_("user:bob").post(revisions(api), revision()), 404, NOT_FOUND)
    expect(api.post(api.contexts + "/absent/revisions", revision()), 404, NOT_FOUND)


def test_publish_requires_write(api: Namespaced) -> None:
    alice = api.as_("user:alice")
    assert alice.post("/v1/contexts", api.context_body()).status_code == 201
    grant(alice, "agent:reader", "read", "attach", "derive", "administer", path=api.context)
    grant(alice, "agent:writer", "read", "write", path=api.context)
    expect(api.as_("agent:reader").post(revisions(api), revision()), 404, NOT_FOUND)
    assert api.as_("agent:writer").post(revisions(api), revision()).status_code == 201
    assert [r["id"] for r in alice.get(revisions(api)).json()["items"]] == [A]


def test_reposting_the_current_revision_adds_nothing(ctx: Namespaced) -> None:
    assert ctx.post(revisions(ctx), revision(producer="first")).status_code == 201
    again = ctx.post(revisions(ctx), {**revision(producer="second"), "operation": "other"})
    assert again.status_code == 201
    assert [r["producer"] for r in again.json()["revisions"]] == ["first"]
    items = ctx.get(revisions(ctx)).json()["items"]
    assert [(r["id"], r["producer"], r["operation"]) for r in items] == [(A, "first", "sync")]


def test_posting_an_older_revision_appends_it_again(ctx: Namespaced) -> None:
    for id_ in (A, B, A):
        resp = ctx.post(revisions(ctx), revision(id_))
        assert resp.status_code == 201
        assert resp.json()["currentRevision"] == id_
    assert [r["id"] for r in ctx.get(revisions(ctx)).json()["items"]] == [A, B, A]
    body = ctx.get(ctx.context).json()
    assert body["currentRevision"] == A
    assert [r["id"] for r in body["revisions"]] == [A, B, A]
    assert ctx.post(revisions(ctx), revision(A)).status_code == 201
    assert len(ctx.get(revisions(ctx)).json()["items"]) == 3


def test_history_is_in_publication_order(ctx: Namespaced) -> None:
    ids = [f"{i:064x}" for i in (9, 3, 7, 1, 5)]
    for id_ in ids:
        assert ctx.post(revisions(ctx), revision(id_)).status_code == 201
        assert ctx.get(revisions(ctx)).json()["items"][-1]["id"] == id_
    assert [r["id"] for r in ctx.get(revisions(ctx)).json()["items"]] == ids
    listed = ctx.get(ctx.contexts).json()["items"][0]
    assert listed["currentRevision"] == ids[-1]
    assert [r["id"] for r in listed["revisions"]] == ids


def test_listing_requires_read(api: Namespaced) -> None:
    alice = api.as_("user:alice")
    assert alice.post("/v1/contexts", api.context_body()).status_code == 201
    assert alice.get(revisions(api)).text == '{"items":[]}'
    grant(alice, "agent:admin", "administer", path=api.context)
    grant(alice, "agent:reader", "read", path=api.context)
    expect(api.as_("agent:admin").get(revisions(api)), 404, NOT_FOUND)
    expect(api.as_("agent:nobody").get(revisions(api)), 404, NOT_FOUND)
    expect(alice.get(api.contexts + "/absent/revisions"), 404, NOT_FOUND)
    assert api.as_("agent:reader").get(revisions(api)).json() == {"items": []}
    published = api.as_("service:context-service-admin").post(revisions(api), revision())
    assert published.status_code == 201
    assert [r["id"] for r in api.as_("agent:reader").get(revisions(api)).json()["items"]] == [A]


def test_revisions_are_not_audited(ctx: Namespaced) -> None:
    assert ctx.post(revisions(ctx), revision()).status_code == 201
    actions = [e["action"] for e in ctx.get(ctx.context + "/audit").json()["items"]]
    assert actions == ["context.created"]

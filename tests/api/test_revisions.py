"""Spec 1.6 and 2.5: publishing and listing context revisions."""

from __future__ import annotations

from typing import Any

import pytest

from tests.api.conftest import Api, context_body, each, expect
from tests.support.api_helpers import grant

LIST = "/v1/namespaces/team1/contexts"
CTX = LIST + "/research-memory"
REVS = CTX + "/revisions"
A, B, C = "a" * 64, "b" * 64, "0123456789abcdef" * 4
NOT_FOUND = {"error": "not_found", "message": "context resource not found"}



def revision(id_: str = A, **extra: Any) -> dict[str, Any]:
    return {"id": id_, "createdAt": "2026-05-01T10:11:12Z", "operation": "sync", **extra}



def invalid(message: str) -> dict[str, str]:
    return {"error": "invalid_request", "message": message}


@pytest.fixture
def ctx(api: Api) -> Api:
    assert api.post("/v1/contexts", context_body()).status_code == 201
    return api


def test_publish_answers_the_resource_with_its_history(ctx: Api) -> None:
    resp = ctx.post(REVS, revision())
    assert resp.status_code == 201
    assert resp.headers["content-type"] == "application/json"
    assert resp.text == (
        '{"name":"research-memory","namespace":"team1","type":"memory","status":"provisioning",'
        '"storage":{"backend":"pvc","size":"5Gi","accessMode":"ReadWriteMany",'
        '"storageClass":"ibm-scale-csi"},"attachment":{"kind":"pvc",'
        '"claimName":"context-research-memory"},"currentRevision":"' + A + '",'
        '"revisions":[{"id":"' + A + '","createdAt":"2026-05-01T10:11:12Z","operation":"sync",'
        '"files":0,"bytes":0}]}')


def test_full_revision_is_rendered_in_key_order(ctx: Api) -> None:
    full = {"id": B, "createdAt": "2026-05-01T10:11:12.5Z", "operation": "transform",
            "producer": "contextctl/1.2", "parameters": {"model": "m1", "chunk": "512"},
            "sources": [{"context": "raw-notes", "type": "workspace", "revision": C},
                        {"context": "facts", "type": "memory", "revision": A}],
            "files": 12, "bytes": 4096}
    resp = ctx.post(REVS, full)
    assert resp.status_code == 201
    listed = ctx.get(REVS)
    assert listed.json() == {"items": [full]}
    assert list(listed.json()["items"][0]) == list(full)
    assert list(listed.json()["items"][0]["sources"][0]) == ["context", "type", "revision"]


def test_files_and_bytes_are_not_range_checked(ctx: Api) -> None:
    resp = ctx.post(REVS, revision(files=-1, bytes=2**62, producer="", parameters={}))
    assert resp.status_code == 201
    item = ctx.get(REVS).json()["items"][0]
    assert (item["files"], item["bytes"]) == (-1, 2**62)
    assert "producer" not in item and "parameters" not in item and "sources" not in item


def test_created_at_is_normalised_to_utc(ctx: Api) -> None:
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
        assert ctx.post(REVS, {**revision(id_), "createdAt": sent}).status_code == 201
    got = [r["createdAt"] for r in ctx.get(REVS).json()["items"]]
    assert got == [echoed for _, echoed in cases]


def test_created_at_must_be_rfc3339_with_a_zone(ctx: Api) -> None:
    bad = ["2026-05-01T10:11:12", "2026-05-01", "yesterday", "", "2026-13-01T10:11:12Z",
           "2026-05-01 10:11:12Z ", "2026-05-01T25:11:12Z", "1714558272"]

    def probe(value: str) -> None:
        resp = ctx.post(REVS, {**revision(), "createdAt": value})
        assert resp.status_code == 400, resp.text
        assert resp.json()["error"] == "invalid_request"
        assert resp.json()["message"] != "revision creation time is required"

    each(bad, probe)
    resp = ctx.post(REVS, {**revision(), "createdAt": 1714558272})
    assert resp.status_code == 400
    assert ctx.get(REVS).json() == {"items": []}


def test_validation_messages_in_order(ctx: Api) -> None:
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
    each(steps, lambda step: expect(ctx.post(REVS, step[0]), 400, step[1]))
    assert ctx.get(REVS).json() == {"items": []}


def test_unknown_fields_are_rejected(ctx: Api) -> None:
    for body in ({**revision(), "current": True},
                 {**revision(), "sources": [{"context": "c", "type": "t", "revision": B,
                                             "extra": 1}]},
                 {**revision(), "parameters": {"a": 1}}):
        resp = ctx.post(REVS, body)
        assert resp.status_code == 400, body
        assert resp.json()["error"] == "invalid_request"


def test_validation_answers_before_authorization(api: Api) -> None:
    assert api.as_("user:alice").post("/v1/contexts", context_body()).status_code == 201
    bad = {"id": "nope", "createdAt": "2026-05-01T10:11:12Z", "operation": "sync"}
    message = invalid("revision id must be a lowercase SHA-256 digest")
    expect(api.as_("user:bob").post(REVS, bad), 400, message)
    expect(api.post(LIST + "/absent/revisions", bad), 400, message)
    expect(api.post(LIST + "/absent/revisions", raw=b""), 400,
           invalid("request body is required"))
    expect(api.as_("user:bob").post(REVS, revision()), 404, NOT_FOUND)
    expect(api.post(LIST + "/absent/revisions", revision()), 404, NOT_FOUND)


def test_publish_requires_write(api: Api) -> None:
    alice = api.as_("user:alice")
    assert alice.post("/v1/contexts", context_body()).status_code == 201
    grant(alice, "agent:reader", "read", "attach", "derive", "administer")
    grant(alice, "agent:writer", "read", "write")
    expect(api.as_("agent:reader").post(REVS, revision()), 404, NOT_FOUND)
    assert api.as_("agent:writer").post(REVS, revision()).status_code == 201
    assert [r["id"] for r in alice.get(REVS).json()["items"]] == [A]


def test_reposting_the_current_revision_adds_nothing(ctx: Api) -> None:
    assert ctx.post(REVS, revision(producer="first")).status_code == 201
    again = ctx.post(REVS, {**revision(producer="second"), "operation": "other"})
    assert again.status_code == 201
    assert [r["producer"] for r in again.json()["revisions"]] == ["first"]
    items = ctx.get(REVS).json()["items"]
    assert [(r["id"], r["producer"], r["operation"]) for r in items] == [(A, "first", "sync")]


def test_posting_an_older_revision_appends_it_again(ctx: Api) -> None:
    for id_ in (A, B, A):
        resp = ctx.post(REVS, revision(id_))
        assert resp.status_code == 201
        assert resp.json()["currentRevision"] == id_
    assert [r["id"] for r in ctx.get(REVS).json()["items"]] == [A, B, A]
    body = ctx.get(CTX).json()
    assert body["currentRevision"] == A
    assert [r["id"] for r in body["revisions"]] == [A, B, A]
    assert ctx.post(REVS, revision(A)).status_code == 201
    assert len(ctx.get(REVS).json()["items"]) == 3


def test_history_is_in_publication_order(ctx: Api) -> None:
    ids = [f"{i:064x}" for i in (9, 3, 7, 1, 5)]
    for id_ in ids:
        assert ctx.post(REVS, revision(id_)).status_code == 201
        assert ctx.get(REVS).json()["items"][-1]["id"] == id_
    assert [r["id"] for r in ctx.get(REVS).json()["items"]] == ids
    listed = ctx.get(LIST).json()["items"][0]
    assert listed["currentRevision"] == ids[-1]
    assert [r["id"] for r in listed["revisions"]] == ids


def test_listing_requires_read(api: Api) -> None:
    alice = api.as_("user:alice")
    assert alice.post("/v1/contexts", context_body()).status_code == 201
    assert alice.get(REVS).text == '{"items":[]}'
    grant(alice, "agent:admin", "administer")
    grant(alice, "agent:reader", "read")
    expect(api.as_("agent:admin").get(REVS), 404, NOT_FOUND)
    expect(api.as_("agent:nobody").get(REVS), 404, NOT_FOUND)
    expect(alice.get(LIST + "/absent/revisions"), 404, NOT_FOUND)
    assert api.as_("agent:reader").get(REVS).json() == {"items": []}
    assert api.as_("service:context-service-admin").post(REVS, revision()).status_code == 201
    assert [r["id"] for r in api.as_("agent:reader").get(REVS).json()["items"]] == [A]


def test_revisions_are_not_audited(ctx: Api) -> None:
    assert ctx.post(REVS, revision()).status_code == 201
    actions = [e["action"] for e in ctx.get(CTX + "/audit").json()["items"]]
    assert actions == ["context.created"]

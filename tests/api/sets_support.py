"""Shared setup of the context-set and library API tests: a workspace ``acme`` with one member
per role, context-set bodies, and agent credentials."""

from __future__ import annotations

from typing import Any

from tests.api.conftest import Api

ADMIN = "service:context-service-admin"
WORKSPACE = "acme"
SETS = f"/v1/namespaces/{WORKSPACE}/context-sets"
MEMBERS = f"/v1/namespaces/{WORKSPACE}/members"
CREDENTIALS = f"/api/w/{WORKSPACE}/agent-credentials"
ROLES = {"user:alice": "owner", "user:adam": "admin", "user:mia": "member", "user:vic": "viewer"}

CFO_ANSWER = {"id": "current-cfo", "question": "Who is our CFO?",
              "answer": "Priya Raman has been CFO since 1 July 2024.",
              "citations": ["company-facts/cfo-2024"]}


def seed_workspace(api: Api) -> None:
    for subject, role in ROLES.items():
        kind, _, name = subject.partition(":")
        caller = ADMIN if role == "owner" else "user:alice"
        resp = api.as_(caller).put(MEMBERS, {"subject": {"kind": kind, "name": name},
                                             "role": role})
        assert resp.status_code == 200, resp.text


def set_body(set_id: str = "finance", **fields: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"id": set_id, "name": "Finance",
                            "collections": ["company-facts", "reports"]}
    body.update(fields)
    return {k: v for k, v in body.items() if v is not ...}


def create_set(api: Api, set_id: str = "finance", **fields: Any) -> dict[str, Any]:
    resp = api.as_("user:alice").post(SETS, set_body(set_id, **fields))
    assert resp.status_code == 201, resp.text
    created: dict[str, Any] = resp.json()
    return created


def archive_set(api: Api, set_id: str) -> None:
    assert api.as_("user:alice").delete(f"{SETS}/{set_id}").status_code == 204


def token(api: Api, scopes: tuple[str, ...] = ("context:read",), context_set_id: str = "",
          creator: str = "user:alice") -> str:
    body: dict[str, Any] = {"name": "agent", "scopes": list(scopes), "expiresInDays": 30}
    if context_set_id:
        body["contextSetId"] = context_set_id
    resp = api.as_(creator).post(CREDENTIALS, body)
    assert resp.status_code == 201, resp.text
    value: str = resp.json()["token"]
    return value

"""The context-set steps of ``sets_support`` for a workspace of the test's own (``api.ns``), for
modules sharing one service: the same members, bodies and credentials, under other paths."""

from __future__ import annotations

from typing import Any

from tests.api.namespaced import Namespaced
from tests.api.sets_support import ADMIN, ROLES, set_body
from tests.support.api_helpers import add_member


def sets(api: Namespaced) -> str:
    """The path of the context sets of ``api``'s workspace."""
    return f"/v1/namespaces/{api.ns}/context-sets"


def credentials(api: Namespaced) -> str:
    """The path of the agent credentials of ``api``'s workspace."""
    return f"/api/w/{api.ns}/agent-credentials"


def seed_workspace(api: Namespaced) -> None:
    """One member per role, ``user:alice`` the owner (as ``sets_support.seed_workspace``)."""
    for subject, role in ROLES.items():
        add_member(api, subject, role, caller=ADMIN if role == "owner" else "user:alice",
                   ws=api.ns)


def create_set(api: Namespaced, set_id: str = "finance", **fields: Any) -> dict[str, Any]:
    resp = api.as_("user:alice").post(sets(api), set_body(set_id, **fields))
    assert resp.status_code == 201, resp.text
    created: dict[str, Any] = resp.json()
    return created


def archive_set(api: Namespaced, set_id: str) -> None:
    assert api.as_("user:alice").delete(f"{sets(api)}/{set_id}").status_code == 204


def token(api: Namespaced, scopes: tuple[str, ...] = ("context:read",),
          context_set_id: str = "", creator: str = "user:alice") -> str:
    """A new agent credential of the workspace; its token."""
    body: dict[str, Any] = {"name": "agent", "scopes": list(scopes), "expiresInDays": 30}
    if context_set_id:
        body["contextSetId"] = context_set_id
    resp = api.as_(creator).post(credentials(api), body)
    assert resp.status_code == 201, resp.text
    value: str = resp.json()["token"]
    return value

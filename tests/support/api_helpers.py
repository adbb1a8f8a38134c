"""The API tests' shared steps over HTTP: grants, workspace members, and names unique within a
run (for tests sharing one service per module, which isolate by the names they create)."""

from __future__ import annotations

import itertools
from typing import Any, Protocol

ADMIN = "service:context-service-admin"  # the bootstrap administrator
WS = "acme"
CTX = "/v1/namespaces/team1/contexts/research-memory"

_serial = itertools.count(1)


class Caller(Protocol):
    """What the helpers need of ``tests.api.conftest.Api``."""

    def as_(self, subject: str | None) -> Caller: ...

    def put(self, path: str, body: Any = None, **kw: Any) -> Any: ...


def fresh(prefix: str) -> str:
    """``prefix`` with a number no other call of this process got: a name of the test's own."""
    return f"{prefix}-{next(_serial)}"


def subject_body(subject: str) -> dict[str, str]:
    """``{"kind", "name"}`` of a ``kind:name`` subject."""
    kind, _, name = subject.partition(":")
    return {"kind": kind, "name": name}


def grant(api: Caller, subject: str, *permissions: str, path: str = CTX) -> Any:
    """Grant ``subject`` (``kind:name``) ``permissions`` on the context at ``path``, as the
    caller ``api`` speaks for; the answer must be 200."""
    resp = api.put(path + "/grants", {"subject": subject_body(subject),
                                      "permissions": list(permissions)})
    assert resp.status_code == 200, resp.text
    return resp


def add_member(api: Caller, subject: str, role: str, caller: str = ADMIN, ws: str = WS) -> None:
    """Make ``subject`` a member of ``ws`` with ``role``, as ``caller``."""
    resp = api.as_(caller).put(f"/v1/namespaces/{ws}/members",
                               {"subject": subject_body(subject), "role": role})
    assert resp.status_code == 200, resp.text

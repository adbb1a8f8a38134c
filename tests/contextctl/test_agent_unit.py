"""The ``agent`` group against the Agent Context API's specified routes, answered by httpx's
mock transport with the specification's shapes (members, credentials, context sets). The same
commands run against the real service in ``test_agent.py`` once those routes are served."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from context_service.contextctl import client as client_module
from context_service.contextctl import options
from context_service.contextctl.main import main

CREDENTIAL = {"id": "3f9a1c0b7d2e4a68", "name": "research agent", "scopes": ["context:read"],
              "createdBy": "user:alice", "createdAt": "2025-06-01T10:00:00Z",
              "expiresAt": "2025-08-30T10:00:00Z", "status": "active"}
TOKEN = "bdk_3f9a1c0b7d2e4a68_q0Jb3N6pZkS2vV1f8YtXw4uHcR9mLgEaT5yBdO7nKiU"
SET = {"id": "finance", "name": "Finance", "status": "active", "version": 2,
       "collections": ["company-facts"], "createdAt": "2025-06-01T10:00:00Z",
       "updatedAt": "2025-06-02T10:00:00Z"}
Route = tuple[str, str]


class Recorder:
    def __init__(self, answers: dict[Route, tuple[int, Any]]) -> None:
        self.answers = answers
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        status, body = self.answers[(request.method, request.url.raw_path.decode())]
        if body is None:
            return httpx.Response(status)
        return httpx.Response(status, json=body)

    def body(self, index: int = -1) -> Any:
        return json.loads(self.requests[index].content)


@pytest.fixture
def run(monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> Callable[..., tuple[int, str, str, Recorder]]:
    def go(answers: dict[Route, tuple[int, Any]], *args: str,
           **env: str) -> tuple[int, str, str, Recorder]:
        recorder = Recorder(answers)

        def make(settings: Any, user_agent: str = "") -> client_module.Client:
            return client_module.Client(settings, httpx.MockTransport(recorder), user_agent)

        monkeypatch.setattr(options, "Client", make)
        monkeypatch.delenv("CS_AGENT_TOKEN", raising=False)
        monkeypatch.setenv("CS_SUBJECT", "user:alice")
        monkeypatch.setenv("CS_NAMESPACE", "ws1")
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        code = main(list(args))
        out = capsys.readouterr()
        return code, out.out, out.err, recorder

    return go


def test_members(run: Any) -> None:
    listing = {"items": [
        {"subject": {"kind": "user", "name": "alice"}, "role": "owner",
         "since": "2025-05-02T08:00:00Z"},
        {"subject": {"kind": "user", "name": "bob"}, "role": "viewer",
         "since": "2025-05-03T11:20:00Z"}]}
    code, out, _, seen = run({("GET", "/v1/namespaces/ws1/members"): (200, listing)},
                             "agent", "members", "ls")
    assert code == 0 and seen.requests[0].headers["X-Context-Subject"] == "user:alice"
    assert out == ("SUBJECT      ROLE     SINCE\n"
                   "user:alice   owner    2025-05-02T08:00:00Z\n"
                   "user:bob     viewer   2025-05-03T11:20:00Z\n")
    member = {"subject": {"kind": "user", "name": "bob"}, "role": "admin",
              "since": "2025-06-01T10:00:00Z"}
    code, out, _, seen = run({("PUT", "/v1/namespaces/team/members"): (200, member)},
                             "agent", "members", "set", "user:bob", "admin", "-n", "team")
    assert (code, out) == (0, "user:bob is admin in team\n")
    assert seen.body() == {"subject": {"kind": "user", "name": "bob"}, "role": "admin"}
    code, out, _, seen = run({("DELETE", "/v1/namespaces/ws1/members/service:ns%2Fsa"):
                              (204, None)}, "agent", "members", "rm", "service:ns/sa")
    assert (code, out) == (0, "removed service:ns/sa from ws1\n")
    last_owner = {"error": "conflict",
                  "message": "workspace membership conflict: a workspace keeps at least one owner"}
    code, _, err, _ = run({("DELETE", "/v1/namespaces/ws1/members/user:alice"):
                           (409, last_owner)}, "agent", "members", "rm", "user:alice")
    assert (code, err) == (1, "contextctl: workspace membership conflict: a workspace keeps at "
                              "least one owner\n")
    assert run({}, "agent", "members", "set", "user:bob", "boss")[0] == 2


def test_credentials(run: Any) -> None:
    path = "/api/w/ws1/agent-credentials"
    code, out, err, seen = run({("POST", path): (201, {**CREDENTIAL, "token": TOKEN})},
                               "agent", "credentials", "create", "research agent",
                               "--expires-in-days", "90")
    assert code == 0
    assert seen.body() == {"name": "research agent", "scopes": ["context:read"],
                           "expiresInDays": 90}
    assert f"\n  Token:      {TOKEN}\n" in out
    assert err == ("Store this token now: it is shown only once and the service cannot show "
                   "it again.\n")
    code, out, err, seen = run({("POST", path): (201, {**CREDENTIAL, "token": TOKEN})},
                               "agent", "credentials", "create", "bound", "--scope",
                               "queries:run", "--scope", "context:read", "--context-set",
                               "finance", "--json")
    assert json.loads(out)["token"] == TOKEN and "shown only once" in err
    assert seen.body()["scopes"] == ["queries:run", "context:read"]
    assert seen.body()["contextSetId"] == "finance"
    revoked = {**CREDENTIAL, "status": "revoked", "revokedAt": "2025-06-03T10:00:00Z",
               "revokedBy": "user:alice"}
    code, out, _, _ = run({("GET", path): (200, {"items": [revoked, CREDENTIAL]})},
                          "agent", "credentials", "ls")
    assert out.splitlines()[0].split() == ["ID", "NAME", "SCOPES", "STATUS", "EXPIRES",
                                           "CREATED", "BY", "CONTEXT", "SET"]
    assert "revoked" in out.splitlines()[1] and "active" in out.splitlines()[2]
    code, out, _, _ = run({("GET", f"{path}/3f9a1c0b7d2e4a68"): (200, revoked)},
                          "agent", "credentials", "get", "3f9a1c0b7d2e4a68")
    assert re.search(r"\n  Revoked by: +user:alice\n", out) and "Token" not in out
    code, out, _, _ = run({("DELETE", f"{path}/3f9a1c0b7d2e4a68"): (204, None)},
                          "agent", "credentials", "revoke", "3f9a1c0b7d2e4a68")
    assert (code, out) == (0, "revoked credential 3f9a1c0b7d2e4a68\n")
    invalid = {"code": "VALIDATION_ERROR", "message": "request validation failed",
               "details": [{"path": "$.expiresInDays", "message": "must be between 1 and 365"}]}
    code, _, err, _ = run({("POST", path): (400, invalid)}, "agent", "credentials", "create",
                          "x", "--expires-in-days", "400")
    assert (code, err) == (1, "contextctl: request validation failed: $.expiresInDays: must be "
                              "between 1 and 365\n")


def test_sets_admin_and_agent_views(run: Any) -> None:
    code, out, _, _ = run({("GET", "/v1/namespaces/ws1/context-sets"): (200, {"items": [SET]})},
                          "agent", "sets", "ls")
    assert out == ("ID        NAME      STATUS   VERSION   COLLECTIONS\n"
                   "finance   Finance   active   2         company-facts\n")
    code, out, _, _ = run({("GET", "/v1/namespaces/ws1/context-sets/finance"): (200, SET)},
                          "agent", "sets", "get", "finance")
    assert out.startswith("Context set\n  ID:                finance\n"
                          "  Name:              Finance\n")
    scored = {"items": [{"id": "finance", "name": "Finance", "version": 2,
                         "collections": ["company-facts"], "score": 0.5}]}
    code, out, _, seen = run({("POST", "/api/agent/v1/context-sets/list"): (200, scored)},
                             "agent", "sets", "ls", "--agent", "--query", "finance", "--limit",
                             "5", CS_AGENT_TOKEN=TOKEN)
    assert seen.requests[0].headers["Authorization"] == f"Bearer {TOKEN}"
    assert seen.body() == {"query": "finance", "limit": 5}
    assert out.splitlines()[1].split() == ["finance", "Finance", "active", "2", "company-facts",
                                           "0.5"]
    code, out, _, seen = run({("POST", "/api/agent/v1/context-sets/get"): (200, SET)},
                             "agent", "sets", "get", "--agent", CS_AGENT_TOKEN=TOKEN)
    assert code == 0 and seen.body() == {}
    assert run({}, "agent", "sets", "ls", "--query", "x")[0] == 2
    assert run({}, "agent", "sets", "get")[0] == 2
    code, _, err, _ = run({}, "agent", "sets", "ls", "--agent")
    assert (code, err) == (1, "contextctl: an agent credential is required: set "
                              "CS_AGENT_TOKEN\n")

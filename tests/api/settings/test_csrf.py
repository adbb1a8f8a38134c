"""CSRF rules without a browser: a state-changing request that a browser marks (Origin or
Sec-Fetch-*) to /v1/, /api/w/ or /settings must repeat the page's signed cookie token in
X-CSRF-Token; other clients are not affected; the agent API refuses browsers first. The module's
tests share one service, each in workspaces of its own (``team``)."""

from __future__ import annotations

from typing import Any

import pytest
from litestar.testing import TestClient

from context_service import bootstrap
from context_service.http.app import create_app
from context_service.http.settings import csrf
from tests.api.agent.conftest import read_probe
from tests.api.conftest import Api
from tests.api.namespaced import Namespaced, namespaced
from tests.api.settings.conftest import PageToken, page_token
from tests.support.api_helpers import add_member, fresh

pytestmark = pytest.mark.shared_service

BROWSER = [{"Origin": "http://testserver.local"}, {"Sec-Fetch-Site": "same-origin"},
           {"Origin": "null"}, {"sec-fetch-mode": "cors"}]
PROBE = "/api/agent/v1/test-probe/read"
REFUSED = "csrf token is missing or invalid; reload the page and try again"


@pytest.fixture
def team(api: Api) -> Namespaced:
    """conftest's ``team`` in workspaces of the test's own: ``team.ns`` with alice (owner) and
    bob (admin); alice is also admin of another. The module's one client starts with no
    cookie, as a client of its own would."""
    api.client.cookies.clear()
    own = namespaced(api, "acme")
    add_member(own, "user:alice", "owner", ws=own.ns)
    add_member(own, "user:bob", "admin", caller="user:alice", ws=own.ns)
    add_member(own, "user:alice", "admin", ws=fresh("beta"))
    return own


def _credentials(team: Namespaced) -> str:
    return f"/api/w/{team.ns}/agent-credentials"


def _members(team: Namespaced) -> str:
    return f"/v1/namespaces/{team.ns}/members"


def _page_token(team: Namespaced) -> PageToken:
    """``page_token`` of the team's agent-access page."""
    return page_token(team, f"/settings/w/{team.ns}/agent-access")


def _credential_body() -> dict[str, Any]:
    return {"name": "research agent", "scopes": ["context:read"], "expiresInDays": 30}


def _member_body(name: str = "carol") -> dict[str, Any]:
    return {"subject": {"kind": "user", "name": name}, "role": "member"}


def _writes(api: Namespaced, credential_id: str) -> list[tuple[str, str, Any]]:
    """Every state-changing route the page uses, plus a /v1 context write."""
    credentials, members = _credentials(api), _members(api)
    return [("POST", credentials, _credential_body()),
            ("DELETE", f"{credentials}/{credential_id}", None),
            ("PUT", members, _member_body()),
            ("DELETE", f"{members}/user:bob", None),
            ("POST", "/v1/contexts", {"name": "notes", "namespace": api.ns, "type": "memory",
                                      "storage": {"backend": "pvc", "size": "1Gi",
                                                  "accessMode": "ReadWriteOnce"}})]


def _created(api: Namespaced) -> str:
    resp = api.as_("user:alice").post(_credentials(api), _credential_body())
    assert resp.status_code == 201, resp.text
    return str(resp.json()["id"])


def _state(api: Namespaced) -> tuple[Any, Any]:
    alice = api.as_("user:alice")
    return (alice.get(_credentials(api)).json(), alice.get(_members(api)).json())


@pytest.mark.parametrize("marks", BROWSER)
def test_browser_writes_without_a_token_are_refused_and_record_nothing(
        team: Namespaced, marks: dict[str, str]) -> None:
    credential_id = _created(team)
    before = _state(team)
    alice = team.as_("user:alice")
    for method, path, body in _writes(team, credential_id):
        resp = alice.request(method, path, body, headers=marks)
        assert resp.status_code == 403, (method, path, resp.text)
        if path.startswith("/api/"):
            assert resp.json() == {"code": "FORBIDDEN", "message": REFUSED}
            assert resp.headers["cache-control"] == "no-store"
        else:
            assert resp.json() == {"error": "forbidden", "message": REFUSED}
    assert _state(team) == before


def test_every_wrong_token_is_refused(team: Namespaced) -> None:
    token = _page_token(team)
    assert token.meta == token.cookie
    other = csrf.issue(csrf.signing_key(b"another service's credential key......"))
    nonce, signature = token.cookie.split(".")
    cases = {
        "header only": (token.meta, None),
        "cookie only": (None, token.cookie),
        "different tokens": (token.meta, _page_token(team).cookie),
        "signed with another key, in both": (other, other),
        "forged signature, in both": (f"{nonce}.{signature[::-1]}", f"{nonce}.{signature[::-1]}"),
        "unsigned nonce, in both": (nonce, nonce),
        "empty": ("", ""),
    }
    origin = {"Origin": "http://testserver.local"}
    for case, (header, cookie) in cases.items():
        headers = dict(origin)
        if header is not None:
            headers["X-CSRF-Token"] = header
        if cookie is not None:
            headers["Cookie"] = f"theme=dark; cs_csrf={cookie}"
        resp = team.as_("user:alice").put(_members(team), _member_body(), headers=headers)
        assert resp.status_code == 403, (case, resp.text)
    assert "user:carol" not in str(team.as_("user:alice").get(_members(team)).json())


def test_the_page_token_lets_every_browser_write_through(team: Namespaced) -> None:
    credential_id = _created(team)
    token = _page_token(team)
    headers = {"Origin": "http://testserver.local", "Sec-Fetch-Site": "same-origin",
               "Sec-Fetch-Mode": "cors", "X-CSRF-Token": token.meta,
               "Cookie": f"cs_csrf={token.cookie}"}
    expected = [201, 204, 200, 204, 201]
    alice = team.as_("user:alice")
    for (method, path, body), status in zip(_writes(team, credential_id), expected, strict=True):
        resp = alice.request(method, path, body, headers=headers)
        assert resp.status_code == status, (method, path, resp.text)


def test_clients_that_are_not_browsers_need_no_token(team: Namespaced) -> None:
    credential_id = _created(team)
    alice = team.as_("user:alice")
    expected = [201, 204, 200, 204, 201]
    for (method, path, body), status in zip(_writes(team, credential_id), expected, strict=True):
        resp = alice.request(method, path, body)
        assert resp.status_code == status, (method, path, resp.text)


def test_reads_from_a_browser_need_no_token(team: Namespaced) -> None:
    alice = team.as_("user:alice")
    for path in (_credentials(team), _members(team), "/v1/workspaces"):
        resp = alice.get(path, headers={"Origin": "http://testserver.local",
                                        "Sec-Fetch-Site": "same-origin"})
        assert resp.status_code == 200, (path, resp.text)


def test_the_agent_api_refuses_browsers_before_any_token_check(
        team: Namespaced, container: bootstrap.Container) -> None:
    created = team.as_("user:alice").post(_credentials(team), _credential_body()).json()
    token = _page_token(team)
    app = create_app(bootstrap.services(container), extra_routes=[read_probe])
    with TestClient(app=app) as client:
        bearer = {"Authorization": f"Bearer {created['token']}"}
        assert client.post(PROBE, content=b"{}", headers=bearer).status_code == 200
        resp = client.post(PROBE, content=b"{}", headers={
            **bearer, "Origin": "http://testserver.local", "X-CSRF-Token": token.meta,
            "Cookie": f"cs_csrf={token.cookie}"})
    assert resp.status_code == 403, resp.text
    assert resp.json()["code"] == "AGENT_BROWSER_REQUEST_REFUSED"


def test_tokens_are_signed_random_values() -> None:
    key = csrf.signing_key(b"k" * 32)
    first, second = csrf.issue(key), csrf.issue(key)
    assert first != second
    assert csrf.valid(key, first) and csrf.passes(key, first, first)
    assert not csrf.passes(key, first, second)
    assert not csrf.valid(csrf.signing_key(b"j" * 32), first)
    assert csrf.signing_key(b"k" * 32) != b"k" * 32

"""The settings pages and the routes they call, attacked: requests a hostile page can make a
browser send, and values a careless or hostile user can put in front of the pages. The module's
tests share one service, each in a workspace of its own, with no cookie to start with."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest
from litestar.datastructures import State
from litestar.types import Message, Receive, Scope, Send

from context_service.http.settings import SettingsGuard, csrf
from tests.api.conftest import Api
from tests.api.namespaced import Namespaced, namespaced
from tests.support.api_helpers import add_member

pytestmark = pytest.mark.shared_service

HOST = "http://testserver.local"
BROWSER = {"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"}


@pytest.fixture
def team(api: Api) -> Namespaced:
    """A workspace of the test's own with alice as owner; the client holds no cookie."""
    api.client.cookies.clear()
    own = namespaced(api, "acme")
    add_member(own, "user:alice", "owner", ws=own.ns)
    return own


def _raw(api: Namespaced, method: str, path: str, body: object,
         headers: dict[str, str]) -> object:
    """``path`` exactly as written (``//v1/...`` is not a protocol-relative address here)."""
    return api.client.request(method, HOST + path, json=body,
                              headers={"X-Context-Subject": "user:alice", **headers})


@pytest.mark.parametrize("prefix", ["/", "//", "///"])
def test_extra_slashes_do_not_slip_a_browser_write_past_the_token(team: Namespaced,
                                                                  prefix: str) -> None:
    """A hostile page can send ``POST //api/w/...`` (a form or ``fetch`` with ``no-cors``):
    whatever path the router answers, the CSRF rule sees the same one."""
    credentials = f"{prefix}api/w/{team.ns}/agent-credentials"
    members = f"{prefix}v1/namespaces/{team.ns}/members"
    created = _raw(team, "POST", credentials, {"name": "planted", "scopes": ["context:read"],
                                               "expiresInDays": 30}, BROWSER)
    added = _raw(team, "PUT", members, {"subject": {"kind": "user", "name": "mallory"},
                                        "role": "owner"}, BROWSER)
    assert created.status_code == 403, created.text  # type: ignore[attr-defined]
    assert added.status_code == 403, added.text  # type: ignore[attr-defined]
    alice = team.as_("user:alice")
    assert alice.get(f"/api/w/{team.ns}/agent-credentials").json()["items"] == []
    assert "mallory" not in str(alice.get(f"/v1/namespaces/{team.ns}/members").json())


@pytest.mark.parametrize("proxied", [{"X-Forwarded-Proto": "https"},
                                     {"X-Forwarded-Proto": "https, http"},
                                     {"Forwarded": 'for=192.0.2.7;proto=https;host="ctx.example"'},
                                     {"Forwarded": "for=192.0.2.7;Proto=HTTPS, for=10.0.0.2"}])
def test_the_token_cookie_is_secure_behind_a_tls_gateway(api: Api,
                                                         proxied: dict[str, str]) -> None:
    """The gateway ends TLS and forwards plain http, saying so in ``X-Forwarded-Proto`` or
    ``Forwarded``: the person's browser is on https, so the cookie must be ``Secure``."""
    api.client.cookies.clear()
    resp = api.get("/settings", headers=proxied)
    assert resp.status_code == 200, resp.text
    assert "; Secure" in resp.headers["set-cookie"] or resp.headers["set-cookie"].endswith(
        "Secure"), resp.headers["set-cookie"]


@pytest.mark.parametrize("proxied", [{}, {"X-Forwarded-Proto": "http"},
                                     {"Forwarded": "for=192.0.2.7;proto=http"},
                                     {"X-Forwarded-Proto": "http, https"}])
def test_the_token_cookie_is_not_secure_over_plain_http(api: Api,
                                                        proxied: dict[str, str]) -> None:
    """Over plain http a browser drops a ``Secure`` cookie, and every write would be refused."""
    api.client.cookies.clear()
    resp = api.get("/settings", headers=proxied)
    assert "secure" not in resp.headers["set-cookie"].lower(), resp.headers["set-cookie"]


@pytest.mark.parametrize("path", ["/settings/static", "/settings/static/"])
def test_every_settings_answer_carries_the_console_headers(api: Api, path: str) -> None:
    """The asset folder itself is no asset: its answer is the 404 page, framed by nobody."""
    resp = api.client.get(HOST + path)
    assert resp.status_code == 404, resp.text
    assert "Page not found" in resp.text
    assert resp.headers["x-frame-options"] == "DENY"
    assert "frame-ancestors 'none'" in resp.headers["content-security-policy"]
    assert resp.headers["x-content-type-options"] == "nosniff"
    assert resp.headers["cache-control"] == "no-store"


class _Downstream:
    """The application behind the guard: records whether a request reached it."""

    def __init__(self) -> None:
        self.reached: list[str] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        self.reached.append(scope["path"])


@pytest.mark.parametrize("path", ["//api/w/acme/agent-credentials", "///v1/namespaces/acme/members",
                                  "/v1//namespaces/acme/members", "//settings//w/acme"])
def test_the_guard_reads_paths_as_the_router_does(path: str) -> None:
    """The guard does not rely on the router having collapsed the slashes first: mounted in
    front of routing, ``//api/w/...`` is still a browser write that needs the token."""
    downstream = _Downstream()
    guard = SettingsGuard(downstream)
    app = SimpleNamespace(state=State({"settings_csrf_key": csrf.signing_key(b"k" * 32)}))
    sent: list[Message] = []

    async def receive() -> Message:
        return {"type": "http.request", "body": b"{}", "more_body": False}

    async def send(message: Message) -> None:
        sent.append(message)

    scope = {"type": "http", "method": "POST", "path": path, "app": app,
             "headers": [(b"origin", b"https://evil.example")]}
    asyncio.run(guard(scope, receive, send))  # type: ignore[arg-type]
    assert downstream.reached == []
    assert sent[0]["status"] == 403


@pytest.mark.parametrize("override", ["X-HTTP-Method-Override", "X-HTTP-Method",
                                      "X-Method-Override"])
def test_a_method_override_header_changes_nothing(team: Namespaced, override: str) -> None:
    """A form can only send GET or POST; no header turns either into the DELETE a page's
    script sends with the token."""
    alice = team.as_("user:alice")
    member = f"/v1/namespaces/{team.ns}/members/user:alice"
    read = alice.get(f"/v1/namespaces/{team.ns}/members", headers={override: "DELETE"})
    assert read.status_code == 200, read.text
    posted = _raw(team, "POST", member, None, {override: "DELETE"})
    assert posted.status_code == 405, posted.text  # type: ignore[attr-defined]
    browser = _raw(team, "POST", member, None, {**BROWSER, override: "DELETE"})
    assert browser.status_code == 405, browser.text  # type: ignore[attr-defined]
    assert "alice" in str(alice.get(f"/v1/namespaces/{team.ns}/members").json())

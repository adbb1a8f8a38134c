"""Answers under ``/settings`` that no page route makes: a method no page takes (``405``), an
asset that is not there (``404``), a body the limits or the media-type rules would refuse. Each
carries the pages' headers and is the pages' error page for a client that takes HTML (the JSON
``{"error","message"}`` body for one that asks for JSON only). The module's tests share one
service, with no cookie to start with."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from litestar.testing import TestClient
from litestar.types import Message, Receive, Scope, Send

from context_service import bootstrap
from context_service.http.app import create_app
from context_service.http.limits import MAX_BODY
from context_service.http.settings import ConsoleHeaders, SettingsGuard
from context_service.http.settings.guard import HEADERS
from tests.api.conftest import Api
from tests.api.settings.test_pages import Markup

pytestmark = pytest.mark.shared_service

HOST = "http://testserver.local"
HTML = {"Accept": "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"}
JSON = {"Accept": "application/json"}
PAGES = ["/settings", "/settings/w/acme", "/settings/w/acme/agent-access",
         "/settings/w/acme/members", "/settings/w/acme/context-sets",
         "/settings/w/acme/context-sets/finance", "/settings/nothing/here", "/settings/static"]
ASSETS = ["/settings/static/settings.css", "/settings/static/js/api.js",
          "/settings/static/nothing.js"]
WRITES = ["POST", "PUT", "PATCH", "DELETE"]


@pytest.fixture(autouse=True)
def no_cookies(api: Api) -> None:
    api.client.cookies.clear()


def _send(api: Api, method: str, path: str, headers: dict[str, str],
          body: bytes | Iterator[bytes] | None = None) -> Any:
    return api.client.request(method, HOST + path, headers=headers, content=body,
                              follow_redirects=False)


def _assert_console_headers(resp: Any, page: bool = True) -> None:
    for name, value in HEADERS:
        assert resp.headers.get_list(name.decode()) == [value.decode()], (name, resp.headers)
    if page:
        assert resp.headers.get_list("cache-control") == ["no-store"], resp.headers


def _assert_error_page(resp: Any, status: int, heading: str) -> None:
    assert resp.status_code == status, resp.text
    assert resp.headers["content-type"].startswith("text/html"), resp.headers
    assert f"<h1>{heading}</h1>" in resp.text
    markup = Markup()  # the page's CSP would block any inline script, style or handler
    markup.feed(resp.text)
    assert markup.inline == [] and markup.handlers == []


@pytest.mark.parametrize("method", [*WRITES, "TRACE"])
@pytest.mark.parametrize("path", PAGES)
def test_a_method_no_page_takes_is_the_405_page_with_the_headers(api: Api, path: str,
                                                                  method: str) -> None:
    resp = _send(api, method, path, HTML)
    _assert_error_page(resp, 405, "Method not allowed")
    _assert_console_headers(resp)
    assert resp.headers["allow"] == "GET"


@pytest.mark.parametrize("path", PAGES)
def test_head_of_a_page_is_refused_without_a_body_with_the_headers(api: Api, path: str) -> None:
    resp = _send(api, "HEAD", path, HTML)
    assert resp.status_code == 405
    assert resp.content == b""
    _assert_console_headers(resp)
    assert resp.headers["allow"] == "GET"


@pytest.mark.parametrize("method", WRITES)
@pytest.mark.parametrize("path", ASSETS)
def test_a_write_to_an_asset_is_the_405_page_with_the_asset_headers(api: Api, path: str,
                                                                    method: str) -> None:
    resp = _send(api, method, path, HTML)
    _assert_error_page(resp, 405, "Method not allowed")
    _assert_console_headers(resp, page=False)
    assert resp.headers["allow"] == "GET, HEAD"


def test_a_client_that_asks_for_json_gets_the_json_error_with_the_headers(api: Api) -> None:
    resp = _send(api, "PUT", "/settings/w/acme/members", JSON)
    assert resp.status_code == 405
    assert resp.json() == {"error": "method_not_allowed", "message": "method not allowed"}
    _assert_console_headers(resp)
    missing = _send(api, "GET", "/settings/static/nothing.js", JSON)
    assert missing.status_code == 404
    assert missing.json() == {"error": "not_found", "message": "route not found"}
    _assert_console_headers(missing, page=False)


@pytest.mark.parametrize("path", ["/settings/static/nothing.js", "/settings/static/js/nothing.js"])
def test_an_asset_that_is_not_there_is_the_404_page(api: Api, path: str) -> None:
    resp = _send(api, "GET", path, HTML)
    _assert_error_page(resp, 404, "Page not found")
    _assert_console_headers(resp, page=False)


def test_a_write_with_a_trailing_slash_carries_the_headers(api: Api) -> None:
    """The router sends the path on to the one without the slash, which refuses the method."""
    resp = _send(api, "PUT", "/settings/w/acme/members/", HTML)
    assert resp.status_code == 308, resp.text
    assert resp.headers["location"] == "/settings/w/acme/members"
    _assert_console_headers(resp)


@pytest.mark.parametrize(("headers", "body"), [
    ({"Content-Type": "application/json"}, b"{" + b" " * (MAX_BODY + 1) + b"}"),  # over 1 MiB
    ({"Content-Type": "application/json"}, iter([b" " * MAX_BODY, b"{}"])),  # chunked
    ({"Content-Type": "application/xml"}, b"<members/>"),  # a media type nobody reads
    ({"Content-Type": "application/json"}, b"{not json"),
])
def test_a_body_nobody_reads_is_answered_by_the_pages(api: Api, headers: dict[str, str],
                                                      body: bytes | Iterator[bytes]) -> None:
    """No page reads a body: whatever the body, the answer is the pages' 405."""
    resp = _send(api, "POST", "/settings/w/acme/members", {**HTML, **headers}, body)
    _assert_error_page(resp, 405, "Method not allowed")
    _assert_console_headers(resp)


def test_a_browser_write_without_a_token_is_refused_first_with_the_headers(api: Api) -> None:
    resp = _send(api, "DELETE", "/settings/w/acme/members",
                 {**HTML, "Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"})
    assert resp.status_code == 403, resp.text
    _assert_console_headers(resp, page=False)


class _Answers:
    """An application that answers every request itself, as the Host rule or routing do in
    front of the settings routes; ``headers`` are its own."""

    def __init__(self, status: int, headers: list[tuple[bytes, bytes]]) -> None:
        self.status = status
        self.headers = headers

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": self.status,
                    "headers": [(b"content-type", b"application/json"), *self.headers]})
        await send({"type": "http.response.body", "body": b"{}", "more_body": False})


def _answer(app: Any, path: str) -> list[tuple[bytes, bytes]]:
    sent: list[Message] = []

    async def receive() -> Message:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: Message) -> None:
        sent.append(message)

    scope = {"type": "http", "method": "GET", "path": path, "headers": []}
    asyncio.run(app(scope, receive, send))
    headers: list[tuple[bytes, bytes]] = sent[0]["headers"]
    return headers


@pytest.mark.parametrize(("path", "page"), [("/settings", True), ("//settings/w/acme", True),
                                            ("/settings/static/settings.css", False)])
def test_answers_made_in_front_of_routing_carry_the_headers_once(path: str, page: bool) -> None:
    """In front of routing (a ``421`` for a Host the service does not answer for, routing's
    refusals), over the guard's own headers too: each header once."""
    for inner in (_Answers(421, []), _Answers(200, [(b"cache-control", b"max-age=60")])):
        for app in (ConsoleHeaders(inner), ConsoleHeaders(SettingsGuard(inner))):
            headers = _answer(app, path)
            names = [k for k, _ in headers]
            for name, value in HEADERS:
                assert names.count(name) == 1 and (name, value) in headers, (name, headers)
            cache = [v for k, v in headers if k == b"cache-control"]
            assert cache == ([b"no-store"] if page else
                             [v for k, v in inner.headers if k == b"cache-control"])


@pytest.mark.parametrize("path", ["/settingsx", "/v1/workspaces", "/api/w/acme/members"])
def test_answers_of_other_paths_are_left_alone(path: str) -> None:
    headers = _answer(ConsoleHeaders(_Answers(421, [])), path)
    assert headers == [(b"content-type", b"application/json")]


def test_the_error_page_shows_nothing_of_the_request_unescaped(api: Api) -> None:
    resp = _send(api, "PUT", '/settings/w/%3Cimg%20src%3Dx%20onerror%3Dalert(1)%3E"/members',
                 HTML)
    _assert_error_page(resp, 405, "Method not allowed")
    assert "<img src=x" not in resp.text and "&lt;img src=x onerror=alert(1)&gt;" in resp.text


def test_answers_routing_and_the_host_rule_make_carry_the_headers(
        container: bootstrap.Container) -> None:
    """A method Litestar does not know (answered by routing) and a Host the service does not
    serve (answered in front of routing) on a settings path carry the pages' headers."""
    app = create_app(bootstrap.services(container), allowed_hosts=frozenset({"testserver.local"}))
    with TestClient(app=app, base_url="http://testserver.local") as client:
        for resp in (client.request("PROPFIND", "/settings"),
                     client.get("/settings", headers={"Host": "rebind.example"})):
            _assert_console_headers(resp, page=False)

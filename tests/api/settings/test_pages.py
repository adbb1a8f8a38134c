"""The settings pages without a browser: admin-console headers on every page and asset, no
inline script or style, the CSRF cookie and its copy in the page, paths, and the
development-mode setting (off unless turned on). The module's tests share one service, each
with a workspace name of its own and, as a client of its own would, no cookie to start with."""

from __future__ import annotations

from html.parser import HTMLParser

import pytest
from litestar.testing import TestClient

from context_service import bootstrap
from context_service.config import Settings
from context_service.http.app import create_app
from context_service.http.settings import SettingsUi
from tests.api.conftest import Api
from tests.api.settings.conftest import page_token
from tests.support.api_helpers import fresh

pytestmark = pytest.mark.shared_service

# {ws}: the test's workspace
PAGES = ["/settings", "/settings/w/{ws}/agent-access", "/settings/w/{ws}/members",
         "/settings/w/{ws}/context-sets", "/settings/w/{ws}/context-sets/finance"]
ASSETS = ["/settings/static/settings.css", "/settings/static/favicon.svg",
          "/settings/static/js/api.js", "/settings/static/js/agent-access.js"]


class Markup(HTMLParser):
    """Collects what a CSP without 'unsafe-inline' would block."""

    def __init__(self) -> None:
        super().__init__()
        self.scripts: list[dict[str, str | None]] = []
        self.inline: list[str] = []
        self.handlers: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        names = dict(attrs)
        self.handlers += [f"{tag}[{k}]" for k in names if k.startswith("on") or k == "style"]
        if tag == "script":
            self.scripts.append(names)
            self._in_script = True
        if tag == "style":
            self.inline.append("<style>")

    def handle_endtag(self, tag: str) -> None:
        self._in_script = self._in_script and tag != "script"

    def handle_data(self, data: str) -> None:
        if self._in_script and data.strip():
            self.inline.append(data.strip()[:40])


@pytest.fixture
def ws() -> str:
    """The test's workspace: a name no other test of the run uses."""
    return fresh("acme")


@pytest.fixture(autouse=True)
def no_cookies(api: Api) -> None:
    """The module's one client starts each test with no cookie, as a client of its own would."""
    api.client.cookies.clear()


def _assert_console_headers(headers: object) -> None:
    h = headers  # httpx.Headers
    csp = h["content-security-policy"]  # type: ignore[index]
    assert "script-src 'self'" in csp and "unsafe-inline" not in csp and "unsafe-eval" not in csp
    assert "default-src 'none'" in csp and "frame-ancestors 'none'" in csp
    assert "style-src 'self'" in csp and "connect-src 'self'" in csp
    assert h["x-frame-options"] == "DENY"  # type: ignore[index]
    assert h["x-content-type-options"] == "nosniff"  # type: ignore[index]
    assert h["referrer-policy"] == "no-referrer"  # type: ignore[index]


@pytest.mark.parametrize("path", PAGES)
def test_pages_carry_the_console_headers_and_no_inline_script(api: Api, ws: str,
                                                              path: str) -> None:
    resp = api.as_("user:alice").get(path.format(ws=ws))
    assert resp.status_code == 200, resp.text
    assert resp.headers["content-type"].startswith("text/html")
    _assert_console_headers(resp.headers)
    assert resp.headers["cache-control"] == "no-store"
    markup = Markup()
    markup.feed(resp.text)
    assert markup.scripts and all(s.get("src", "").startswith("/settings/static/js/")
                                  and s.get("type") == "module" for s in markup.scripts)
    assert markup.inline == [] and markup.handlers == []


@pytest.mark.parametrize("path", ASSETS)
def test_assets_ship_with_the_package_and_carry_the_headers(api: Api, path: str) -> None:
    resp = api.get(path)
    assert resp.status_code == 200, path
    _assert_console_headers(resp.headers)
    assert "no-store" not in resp.headers["cache-control"]  # revalidated, not refetched
    kind = {"css": "text/css", "svg": "image/svg+xml", "js": "javascript"}[path.rsplit(".", 1)[1]]
    assert kind in resp.headers["content-type"]


def test_the_page_sets_an_http_only_lax_cookie_and_embeds_the_same_token(api: Api,
                                                                       ws: str) -> None:
    pages = [page.format(ws=ws) for page in PAGES]
    api.client.cookies.clear()
    resp = api.get(pages[1])
    cookie = resp.headers["set-cookie"]
    assert cookie.startswith("cs_csrf=") and "HttpOnly" in cookie and "Path=/" in cookie
    assert "samesite=lax" in cookie.lower() and "Secure" not in cookie  # plain http here
    token = page_token(api, pages[1])
    assert token.cookie == token.meta
    # a valid cookie is kept (several tabs share it), set again as the page's own; a forged
    # one is replaced
    again = api.get(pages[2], headers={"Cookie": f"cs_csrf={token.cookie}"})
    assert again.cookies.get("cs_csrf") == token.cookie and token.cookie in again.text
    forged = api.get(pages[2], headers={"Cookie": "cs_csrf=abc.def"})
    assert forged.headers["set-cookie"].startswith("cs_csrf=")
    assert "abc.def" not in forged.text


def test_paths(api: Api, ws: str) -> None:
    client = api.client
    resp = client.get("/settings/", follow_redirects=False)
    assert resp.status_code == 308 and resp.headers["location"] == "/settings"
    resp = client.get(f"/settings/w/{ws}/members/?x=1", follow_redirects=False)
    assert resp.status_code == 308 and resp.headers["location"] == f"/settings/w/{ws}/members?x=1"
    resp = client.get("/settings/w/a%20b", follow_redirects=False)
    assert resp.headers["location"] == "/settings/w/a%20b/agent-access"
    missing = api.get("/settings/nothing/here")
    assert missing.status_code == 404 and "Page not found" in missing.text
    _assert_console_headers(missing.headers)
    assert api.get("/settings/static/nothing.js").status_code == 404
    assert api.post("/settings", {}).status_code == 405  # no page takes a write


def test_workspace_names_are_escaped(api: Api) -> None:
    resp = api.get('/settings/w/%3Cimg%20src%3Dx%20onerror%3Dalert(1)%3E"/members')
    assert resp.status_code == 200
    assert "<img src=x" not in resp.text and "&lt;img src=x onerror=alert(1)&gt;&#34;" in resp.text


def test_development_mode_is_off_unless_turned_on(api: Api, container: bootstrap.Container,
                                                  ws: str) -> None:
    page = api.get(PAGES[1].format(ws=ws)).text
    assert 'data-dev-subject="false"' in page and "Development mode" not in page
    assert Settings.from_env({}).settings_dev_subject is False
    assert Settings.from_env({"CS_SETTINGS_DEV_SUBJECT": "true"}).settings_dev_subject is True
    services = bootstrap.services(container)
    services.settings_ui = SettingsUi(services.settings_ui.workspaces, dev_subject=True)
    with TestClient(app=create_app(services)) as client:
        page = client.get(PAGES[1].format(ws=ws)).text
    assert 'data-dev-subject="true"' in page and "Development mode" in page
    assert 'id="dev-subject"' in page

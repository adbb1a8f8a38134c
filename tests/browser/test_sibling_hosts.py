"""The settings pages under a host name with siblings (``ctx.test`` beside ``evil.ctx.test``,
both resolved to the loopback by the browser): a sibling may set cookies for the parent domain
("cookie tossing"). Here it tosses a ``cs_csrf`` cookie this service signed (anyone can fetch
one from a page) for ``/settings`` only, which the browser then sends before its own on the
pages but never to the management API; the person's writes must keep working. And what a
``__Host-`` cookie prefix would need: Chromium keeps such a cookie over plain http on the
loopback names only."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from context_service import bootstrap
from context_service.http.app import create_app
from tests.browser.conftest import (
    CHROMIUM,
    FLAGS,
    VIEWPORT,
    LiveServer,
    Service,
    require,
)

pytestmark = pytest.mark.browser
SITE = "ctx.test"
SIBLING = "evil.ctx.test"
RESOLVE = f"--host-resolver-rules=MAP {SITE} 127.0.0.1, MAP {SIBLING} 127.0.0.1"


@pytest.fixture(scope="module")
def any_host(live_container: bootstrap.Container) -> Iterator[LiveServer]:
    """The service answering every Host name (the default of ``create_app``)."""
    with LiveServer(create_app(bootstrap.services(live_container))) as live:
        yield live


@pytest.fixture
def any_host_service(any_host: LiveServer) -> Iterator[Service]:
    found = Service(any_host.url)
    yield found
    found.client.close()


@pytest.fixture(scope="module")
def resolving_browser() -> Iterator[Any]:
    """Chromium resolving ``ctx.test`` and ``evil.ctx.test`` to the loopback."""
    require(Path(CHROMIUM).exists() and shutil.which("chromium") is not None,
            "Debian's chromium (/usr/bin/chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=[*FLAGS, RESOLVE],
                                              headless=True)
        yield launched
        launched.close()


def _signed_token(service: Service) -> str:
    """A token of this service's, as anyone gets one: from a page's cookie."""
    resp = service.client.get("/settings/nothing")
    token = resp.cookies.get("cs_csrf")
    assert token
    return token


def _toss(context: Any, server: LiveServer, token: str) -> None:
    """The sibling sets ``cs_csrf`` for the parent domain, for the pages' paths only."""
    sibling = context.new_page()
    sibling.goto(f"http://{SIBLING}:{server.port}/settings/nothing")
    sibling.evaluate(f"document.cookie = 'cs_csrf={token}; Domain={SITE}; Path=/settings'")
    names = [(c["name"], c["domain"], c["path"]) for c in context.cookies()]
    assert ("cs_csrf", f".{SITE}", "/settings") in names, names
    sibling.close()


def _create_credential(page: Any, name: str) -> None:
    page.get_by_role("button", name="Create credential").click()
    page.get_by_label("Name").fill(name)
    with page.expect_response(lambda r: r.request.method == "POST") as answer:
        page.get_by_role("dialog").get_by_role("button", name="Create credential").click()
    assert answer.value.status == 201, answer.value.text()
    page.get_by_role("heading", name="Copy your new token").wait_for()
    assert page.locator("#create-error").inner_text() == ""


@pytest.mark.parametrize("visited_before", [True, False])
def test_a_cookie_tossed_by_a_sibling_host_does_not_lock_the_person_out(
        resolving_browser: Any, any_host: LiveServer, any_host_service: Service,
        workspace: str, visited_before: bool) -> None:
    any_host_service.member(workspace, "user:alice", "owner")
    context = resolving_browser.new_context(
        viewport=VIEWPORT, base_url=f"http://{SITE}:{any_host.port}",
        extra_http_headers={"X-Context-Subject": "user:alice"})
    context.set_default_timeout(10_000)
    page = context.new_page()
    page_path = f"/settings/w/{workspace}/agent-access"
    if visited_before:  # the browser holds the service's own cookie already
        page.goto(page_path)
        page.get_by_text("No agent credentials yet").wait_for()
    _toss(context, any_host, _signed_token(any_host_service))
    page.goto(page_path)
    page.get_by_text("No agent credentials yet").wait_for()
    _create_credential(page, "after the toss")
    page.reload()  # and again, now that the browser's cookies have settled
    page.locator("#credential-rows tr").first.wait_for()
    page.keyboard.press("Escape")
    _create_credential(page, "after a reload")
    context.close()


def test_a_host_prefixed_cookie_needs_a_loopback_name_or_tls(resolving_browser: Any,
                                                              any_host: LiveServer) -> None:
    """Chromium keeps a ``__Host-`` (so ``Secure``) cookie set over plain http by
    ``localhost`` or ``127.0.0.1``, and drops it from any other name: the prefix can only be
    used where the cookie is ``Secure`` already (over TLS), never on a plain-http host."""
    kept = {}
    for host in ("127.0.0.1", "localhost", SITE):
        context = resolving_browser.new_context(base_url=f"http://{host}:{any_host.port}")
        page = context.new_page()
        page.goto("/settings/nothing")
        page.evaluate("document.cookie = '__Host-probe=1; Path=/; Secure; SameSite=Lax'")
        kept[host] = [c["name"] for c in context.cookies() if c["name"] == "__Host-probe"]
        context.close()
    assert kept == {"127.0.0.1": ["__Host-probe"], "localhost": ["__Host-probe"], SITE: []}

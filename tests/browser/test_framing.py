"""Clickjacking: a page of another site frames the settings pages (their confirmation dialogs
among them) and their error answers; the browser shows none of them inside the frame."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from litestar.types import Receive, Scope, Send

from tests.browser.conftest import LiveServer, OpenPage, Service

pytestmark = pytest.mark.browser
BLOCKED = "chrome-error://chromewebdata/"


class _Framing:
    """Another site: a page without a CSP of its own that frames ``?src``."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        src = scope["query_string"].decode().removeprefix("src=")
        body = f'<!doctype html><title>prize</title><iframe src="{src}"></iframe>'.encode()
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"text/html")]})
        await send({"type": "http.response.body", "body": body})


@pytest.fixture(scope="module")
def other_site() -> Iterator[LiveServer]:
    with LiveServer(_Framing()) as live:
        yield live


def _framed(page: Any, other_site: LiveServer, url: str) -> str:
    """The address the frame shows after loading ``url``."""
    page.goto(f"{other_site.url}/?src={url}")
    page.wait_for_load_state("load")
    frame = page.frames[1]
    frame.wait_for_load_state("load")
    address: str = frame.url
    return address


def test_another_site_cannot_frame_the_pages_or_their_errors(
        open_page: OpenPage, service: Service, server: LiveServer, other_site: LiveServer,
        workspace: str) -> None:
    service.member(workspace, "user:alice", "owner")
    page = open_page("user:alice")
    # the frame shows what it is allowed to: the check can tell a framed answer from a refused one
    assert _framed(page, other_site, f"{server.url}/healthz") == f"{server.url}/healthz"
    for path in (f"/settings/w/{workspace}/agent-access", f"/settings/w/{workspace}/members",
                 "/settings/nothing", "/settings/static/nothing.js",
                 "/settings/static/settings.css"):
        assert _framed(page, other_site, server.url + path) == BLOCKED, path

"""Edges of the settings pages: where the trailing-slash redirect may lead, and the CSRF token
when a browser holds more than one ``cs_csrf`` cookie (one a sibling host tossed among them)."""

from __future__ import annotations

import re

import pytest

from context_service.http.settings import csrf
from tests.api.conftest import Api
from tests.api.namespaced import namespaced
from tests.support.api_helpers import add_member

pytestmark = pytest.mark.shared_service

HOST = "http://testserver.local"
_META = re.compile(r'<meta name="csrf-token" content="([^"]+)">')


@pytest.fixture(autouse=True)
def no_cookies(api: Api) -> None:
    """The module's one client starts each test with no cookie, as a client of its own would."""
    api.client.cookies.clear()


@pytest.mark.parametrize(("path", "location"), [
    ("//settings/", "/settings"),
    ("//settings/w/acme/members/", "/settings/w/acme/members"),
    ("///settings/w/acme/", "/settings/w/acme"),
    ("/settings//", "/settings"),
    ("/settings/w/acme/members/?x=1", "/settings/w/acme/members?x=1"),
    # an empty segment: the router collapsed it and answered the page at a path of another shape
    ("/settings//w/acme/agent-access", "/settings/w/acme/agent-access"),
    ("/settings/w//acme/members?x=1", "/settings/w/acme/members?x=1"),
    ("/settings/static//settings.css", "/settings/static/settings.css"),
])
def test_the_trailing_slash_redirect_stays_on_this_service(api: Api, path: str,
                                                            location: str) -> None:
    """A path the pages answer with a leading ``//`` is redirected to a path, never to a
    protocol-relative address (``//settings`` is the host ``settings``)."""
    resp = api.client.get(HOST + path, follow_redirects=False)
    assert resp.status_code == 308, resp.text
    assert resp.headers["location"] == location


def _page(api: Api, path: str, cookies: str | None) -> tuple[str, str | None]:
    """The token a page embeds, and the cookie it sets (None: it keeps the browser's)."""
    resp = api.get(path, headers={"Cookie": cookies} if cookies is not None else None)
    assert resp.status_code == 200, resp.text
    found = _META.search(resp.text)
    assert found is not None
    api.client.cookies.clear()
    return found.group(1), resp.cookies.get("cs_csrf")


def test_the_page_and_the_guard_agree_on_which_cookie_holds_the_token(api: Api) -> None:
    """A browser may send two ``cs_csrf`` cookies (one of another path or parent domain sent
    first, the page's own after it). The page embeds a token the guard then accepts, rather
    than keeping a token every write is refused with ("reload the page" would not help)."""
    own = namespaced(api, "acme")
    add_member(own, "user:alice", "owner", ws=own.ns)
    page = f"/settings/w/{own.ns}/members"
    valid, _ = _page(api, page, None)
    stale = csrf.issue(csrf.signing_key(b"a key this service does not use......"))
    members = f"/v1/namespaces/{own.ns}/members"
    alice = own.as_("user:alice")
    for name, jar in (("carol", f"cs_csrf={stale}; cs_csrf={valid}"),
                      ("dave", f"cs_csrf={valid}; cs_csrf={stale}"),
                      ("erin", f"theme=dark; cs_csrf=junk; cs_csrf={valid}")):
        embedded, set_cookie = _page(api, page, jar)
        if set_cookie is not None:  # a new token: the browser now holds it instead of the old
            assert embedded == set_cookie
            jar = jar.replace(f"cs_csrf={valid}", f"cs_csrf={set_cookie}")
        resp = alice.put(members, {"subject": {"kind": "user", "name": name}, "role": "member"},
                         headers={"Origin": HOST, "X-CSRF-Token": embedded, "Cookie": jar})
        assert resp.status_code == 200, (jar, resp.text)
        forged = alice.put(members, {"subject": {"kind": "user", "name": "mallory"},
                                     "role": "member"},
                           headers={"Origin": HOST, "X-CSRF-Token": stale, "Cookie": jar})
        assert forged.status_code == 403, (jar, forged.text)
    listed = str(alice.get(members).json())
    assert "carol" in listed and "dave" in listed and "erin" in listed
    assert "mallory" not in listed


def test_a_token_tossed_for_the_pages_paths_alone_leaves_writes_working(api: Api) -> None:
    """A sibling host may set a signed ``cs_csrf`` (anyone can fetch one) for the pages' paths
    alone: the browser sends it first on the pages and never with writes to the API. The page
    embeds a token the writes carry, and sets it as its own cookie."""
    own = namespaced(api, "acme")
    add_member(own, "user:alice", "owner", ws=own.ns)
    page = f"/settings/w/{own.ns}/members"
    mine, _ = _page(api, page, None)
    tossed, _ = _page(api, page, None)
    embedded, set_cookie = _page(api, page, f"cs_csrf={tossed}; cs_csrf={mine}")
    assert embedded == mine and set_cookie == mine  # the page's own (Path=/) is sent last
    embedded, set_cookie = _page(api, page, f"cs_csrf={tossed}")  # before any visit
    assert embedded == tossed and set_cookie == tossed  # now the writes carry it too
    members = f"/v1/namespaces/{own.ns}/members"
    alice = own.as_("user:alice")
    for token, jar in ((mine, f"cs_csrf={mine}"), (tossed, f"cs_csrf={mine}; cs_csrf={tossed}")):
        resp = alice.put(members, {"subject": {"kind": "user", "name": "carol"}, "role": "member"},
                         headers={"Origin": HOST, "X-CSRF-Token": token, "Cookie": jar})
        assert resp.status_code == 200, (jar, resp.text)

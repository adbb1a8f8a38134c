"""Settings-page fixtures: a workspace with members, and the CSRF token a page hands out."""

from __future__ import annotations

import re
from dataclasses import dataclass

import pytest

from tests.api.conftest import Api
from tests.support.api_helpers import ADMIN, WS, add_member  # noqa: F401 (the modules import them here)

_META = re.compile(r'<meta name="csrf-token" content="([^"]+)">')


@pytest.fixture
def team(api: Api) -> Api:
    """``acme`` with alice (owner) and bob (admin); alice is also admin of ``beta``."""
    add_member(api, "user:alice", "owner")
    add_member(api, "user:bob", "admin", caller="user:alice")
    add_member(api, "user:alice", "admin", ws="beta")
    return api


@dataclass(frozen=True)
class PageToken:
    cookie: str  # the cs_csrf cookie the page set
    meta: str  # the token embedded in the page


def page_token(api: Api, path: str = f"/settings/w/{WS}/agent-access") -> PageToken:
    api.client.cookies.clear()
    resp = api.get(path)
    assert resp.status_code == 200, resp.text
    found = _META.search(resp.text)
    assert found is not None
    cookie = resp.cookies.get("cs_csrf")
    assert cookie
    api.client.cookies.clear()  # each test says which cookie it sends
    return PageToken(cookie, found.group(1))

"""``contextctl mcp`` asked for a later page of the service's tool listing while the service
cannot be reached.

The day's change forwards the client's ``cursor`` to the service, so a client walks the
service's listing page by page. When the service is not reached the bridge lists its own
catalogue instead, which is right for a first listing; for a later page it handed the client
the whole catalogue again, each tool of the pages before now listed twice. The cursor names a
page of the service's listing: not reached, that page is an error the client can retry.
"""

from __future__ import annotations

from typing import Any

import httpx
import msgspec
import pytest
from mcp import MCPError

from context_service.client import AsyncClient
from context_service.contextctl.mcp_bridge import Bridge
from context_service.contract import tools as catalogue
from tests.contextctl.mcp_listing import walk_listing
from tests.support.pack_lines import BASE

BEARER = "bdk_0123456789abcdef_" + "B" * 43


def _first_page_then_gone(request: httpx.Request) -> httpx.Response:
    """The service's first page (with a cursor for the next); then it is not reached."""
    message = msgspec.json.decode(request.content)
    if (message.get("params") or {}).get("cursor") is not None:
        raise httpx.ConnectError("connection refused", request=request)
    tools = [t.definition().model_dump(mode="json", by_alias=True, exclude_none=True)
             for t in catalogue.TOOLS]
    return httpx.Response(200, json={"jsonrpc": "2.0", "id": 1, "result": {
        "tools": tools[:4], "nextCursor": "page-2"}})


async def _no_wait(_: float) -> None:
    return None


def _walk(bridge: Bridge) -> list[str]:
    return walk_listing(bridge, 3)


def test_a_later_page_of_a_service_not_reached_is_an_error_not_the_catalogue_again(
        capsys: pytest.CaptureFixture[str]) -> None:
    bridge = Bridge(BASE, BEARER, {})
    bridge.client = AsyncClient(token=BEARER, sleep=_no_wait, http=httpx.AsyncClient(
        base_url=BASE, transport=httpx.MockTransport(_first_page_then_gone)))
    names: Any = None
    with pytest.raises(MCPError):
        names = _walk(bridge)
    assert names is None  # never a listing naming a tool twice


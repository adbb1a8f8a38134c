"""A client of ``contextctl mcp`` following its tool listing's ``nextCursor`` page by page."""

from __future__ import annotations

import asyncio

import mcp_types as types

from context_service.contextctl.mcp_bridge import Bridge


def walk_listing(bridge: Bridge, pages: int) -> list[str]:
    """The tool names of up to ``pages`` pages (a listing that never ends stops there); the
    bridge's client is closed after."""
    async def walk() -> list[str]:
        names: list[str] = []
        cursor: str | None = None
        try:
            for _ in range(pages):
                asked = None if cursor is None else types.PaginatedRequestParams(cursor=cursor)
                page = await bridge.list_tools(None, asked)  # type: ignore[arg-type]
                names += [t.name for t in page.tools]
                cursor = page.next_cursor
                if cursor is None:
                    break
        finally:
            await bridge.client.aclose()
        return names

    return asyncio.run(walk())

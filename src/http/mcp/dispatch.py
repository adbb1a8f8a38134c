"""A tool call answered by its agent route, in this process: the same Litestar application
receives the call as an HTTP request with the caller's credential, address and host, so the
whole pipeline, the route's rules and its records apply exactly as over HTTP."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import httpx
import msgspec

FORWARDED = (b"authorization", b"host", b"user-agent")


async def call_route(scope: Mapping[str, Any], path: str,
                     body: dict[str, Any]) -> tuple[int, bytes]:
    """POST ``body`` to the agent route ``path`` of the application serving ``scope``: the
    answer's status and bytes."""
    client = scope.get("client") or ("127.0.0.1", 0)
    transport = httpx.ASGITransport(app=scope["app"], client=(str(client[0]), int(client[1])))
    headers = [(k, v) for k, v in scope["headers"] if k in FORWARDED]
    headers.append((b"content-type", b"application/json"))
    request = httpx.Request("POST", f"{scope.get('scheme', 'http')}://internal{path}",
                            headers=headers, content=msgspec.json.encode(body))
    response = await transport.handle_async_request(request)
    content = await response.aread()
    return response.status_code, content

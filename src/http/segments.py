"""A path parameter is one path segment, percent-decoded (spec 1.1.4), even when it holds an
encoded slash. The server decodes ``%2F`` into a ``/`` before routing, which would split the
segment in two and answer ``route not found`` where the route's own not-found is due
(``/v1/namespaces/team/contexts/a%2Fb`` is the context route asked for a name no context can
have). So the path routing sees is rebuilt from the raw path segment by segment, a slash inside
a segment standing as U+2215 (no name, id or namespace may hold either). Routes that need the
exact bytes (a member's subject may hold ``/``) read the raw path, which is left as it came.
"""

from __future__ import annotations

from urllib.parse import unquote

from litestar.enums import ScopeType
from litestar.types import ASGIApp, Receive, Scope, Send

_ENCODED_SLASHES = (b"%2F", b"%2f")
IN_SEGMENT_SLASH = "\u2215"


def routed_path(raw: bytes) -> str:
    """The decoded path with every segment kept one segment."""
    return "/".join(unquote(segment.decode("latin-1"), errors="replace")
                    .replace("/", IN_SEGMENT_SLASH) for segment in raw.split(b"/"))


class EncodedSlashes:
    """ASGI middleware in front of routing; paths without an encoded slash pass untouched."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == ScopeType.HTTP:
            raw = (scope.get("raw_path") or b"").split(b"?", 1)[0]
            if any(encoded in raw for encoded in _ENCODED_SLASHES):
                scope = {**scope, "path": routed_path(raw)}
        await self.app(scope, receive, send)

"""The context-pack routes (agent-context-api.md §7): one JSON pack, or the same pack as
ndjson. Both run every check and record the release before the first byte is sent; the body is
a function of the request's resolved inputs, so the same request answers the same bytes.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated, Any, cast

from litestar import Request, Response, post
from litestar.params import Body
from litestar.response import Stream

from context_service.contract.agent import (
    LINES_DESCRIPTION,
    ContextPack,
    ContextPackLines,
    PackRequest,
)
from context_service.contract.agent_errors import (
    SHARED_ERRORS,
    PackIncomplete,
)
from context_service.domain.pack.render import render, stream_error_line, stream_lines
from context_service.http.agent.errors import NO_STORE, POSITION_HEADER
from context_service.http.agent.late_body import PendingBody, body_after_pipeline
from context_service.http.agent.pack_flow import Released, release
from context_service.http.refusals import refusals

PATH = "/api/agent/v1/context-packs"
NDJSON = "application/x-ndjson"
ERRORS = refusals(
    {400: "INVALID_REQUEST or VALIDATION_ERROR (details: every violated field rule)",
     401: "UNAUTHORIZED or EXPIRED_CREDENTIAL",
     403: "AGENT_BROWSER_REQUEST_REFUSED, FORBIDDEN (scope; a bound credential naming "
          "another context set) or AGENT_CREDENTIAL_AUTHORITY_LOST",
     404: 'NOT_FOUND: context set not found, collection "<c>" not found',
     422: "AGENT_PACK_INCOMPLETE (require_complete; details.missing)",
     429: "RATE_LIMITED (Retry-After)",
     503: "SERVICE_UNAVAILABLE: the views could not catch up with the log in time"},
    {**SHARED_ERRORS, 422: PackIncomplete})


# the stream's answer as the document states it (Litestar reads its description and bounds here)
LINES = Annotated[ContextPackLines, Body(description=LINES_DESCRIPTION, min_items=2)]


def _headers(released: Released) -> dict[str, str]:
    return {**NO_STORE, POSITION_HEADER: str(released.position),
            "Server-Timing": released.timings.header()}


@post(PATH, status_code=200, opt={"body": PackRequest}, responses=ERRORS)
@body_after_pipeline
def context_pack(request: Request[Any, Any, Any], body: PendingBody) -> Response[ContextPack]:
    """A ranked, deduplicated, cited pack of evidence for a task within a token budget,
    recorded as a replay."""
    released = release(request, body)
    payload = render(released.pack, released.replay_id, released.expires_at)
    rendered: Response[Any] = Response(payload, status_code=200, media_type="application/json",
                                       headers=_headers(released))  # the pack's bytes as rendered
    return rendered


@post(PATH + "/stream", status_code=200, media_type=NDJSON, opt={"body": PackRequest},
      responses=ERRORS)
@body_after_pipeline
def context_pack_stream(request: Request[Any, Any, Any],
                        body: PendingBody) -> Response[LINES]:
    """The same pack as ``application/x-ndjson``: a header line, one line per item, a footer."""
    released = release(request, body)
    lines = stream_lines(released.pack, released.replay_id, released.expires_at)
    streamed = Stream(_written(lines), status_code=200, media_type=NDJSON,
                      headers=_headers(released))
    return cast("Response[LINES]", streamed)  # the lines, as rendered


async def _written(lines: list[bytes]) -> AsyncIterator[bytes]:
    """The lines, and a last error line should producing one fail after the header. They are
    in memory by now, so they are sent from the event loop: a sync iterator would cost a worker
    thread's hop per line (Litestar runs each ``next`` on the default executor)."""
    sent = 0
    try:
        for line in lines:
            yield line
            sent += 1
    except Exception as exc:  # the connection or the service failing mid-stream
        if sent:
            yield stream_error_line(f"the stream failed: {type(exc).__name__}")
        raise


ROUTES = [context_pack, context_pack_stream]

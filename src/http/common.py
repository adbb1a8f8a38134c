"""Helpers every route shares: services, caller, JSON answers, read-your-writes waits."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec
from litestar import Request, Response

from src.domain.events import Subject
from src.http.errors import HttpError
from src.http.ports import Services
from src.http.subject import HEADER, parse_subject

POSITION_HEADER = "X-Context-Position"
_enc = msgspec.json.Encoder()

CATALOG = ("context_catalog",)


def services(request: Request[Any, Any, Any]) -> Services:
    found: Services = request.app.state.services
    return found


def caller(request: Request[Any, Any, Any]) -> Subject:
    return parse_subject(request.headers.get(HEADER), services(request).require_subject)


def json(body: Any, status: int = 200, position: int = 0) -> Response[bytes]:
    headers = {POSITION_HEADER: str(position)} if position else None
    return Response(_enc.encode(body), status_code=status, media_type="application/json",
                    headers=headers)


def no_content(position: int = 0) -> Response[bytes]:
    headers = {POSITION_HEADER: str(position)} if position else None
    return Response(b"", status_code=204, headers=headers)


def wait_for_views(request: Request[Any, Any, Any], views: Sequence[str]) -> None:
    found = services(request)
    if not found.consistency.wait(views, found.read_wait_seconds):
        raise HttpError(503, "unavailable",
                        "the read model has not caught up with the event log; retry shortly")


async def raw_body(request: Request[Any, Any, Any]) -> bytes:
    return await request.body()

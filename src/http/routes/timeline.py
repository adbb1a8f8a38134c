"""History for auditors: a context's events in log order, and reads as of a past point."""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

import msgspec
from litestar import Request, Response, get
from litestar.params import FromPath

from context_service.contract.contexts import HistoryPage
from context_service.domain.context.state import ContextState
from context_service.domain.errors import ContextNotFoundError, RequestInvalidError
from context_service.domain.events import ADMIN
from context_service.domain.registry import event_name
from context_service.domain.stream import Recorded
from context_service.domain.values import format_timestamp, parse_timestamp
from context_service.http.common import caller, json, services, threaded
from context_service.http.refusals import refusals

_POSITION = re.compile(r"[0-9]{1,19}")

PATH = "/v1/namespaces/{namespace:str}/contexts/{name:str}"


class TimelineReads(Protocol):
    def generation_start(self, namespace: str, name: str) -> int: ...

    def events(self, namespace: str, name: str, after: int, limit: int | None,
               since: int) -> list[Recorded]: ...

    def state_as_of(self, namespace: str, name: str, position: int | None = None,
                    time: datetime | None = None) -> ContextState: ...

    def namespace_as_of(self, namespace: str, position: int | None = None,
                        time: datetime | None = None) -> list[ContextState]: ...


@dataclass(frozen=True, slots=True)
class AsOf:
    position: int | None = None
    time: datetime | None = None


def as_of(request: Request[Any, Any, Any]) -> AsOf | None:
    """``?asOf=<RFC 3339>`` or ``?asOfPosition=<n>``; None when neither is given."""
    raw_time = request.query_params.get("asOf")
    raw_position = request.query_params.get("asOfPosition")
    if raw_time is None and raw_position is None:
        return None
    if raw_time is not None and raw_position is not None:
        raise RequestInvalidError("asOf and asOfPosition cannot be combined")
    if raw_position is not None:
        # ASCII digits within a log position's range ("²".isdigit() holds, int() refuses it)
        if _POSITION.fullmatch(raw_position) is None or int(raw_position) >= 2**63:
            raise RequestInvalidError("asOfPosition must be a non-negative integer")
        return AsOf(position=int(raw_position))
    assert raw_time is not None
    moment = parse_timestamp(raw_time)
    if moment is None:
        raise RequestInvalidError("asOf must be an RFC 3339 timestamp with a zone")
    return AsOf(time=moment)


def visible_as_of(request: Request[Any, Any, Any], namespace: str, name: str, point: AsOf,
                  permission: str) -> ContextState:
    """The context as of ``point``; the caller needs ``permission`` now (the bootstrap
    administrator also sees contexts deleted since)."""
    actor = caller(request)
    if actor != ADMIN:
        services(request).contexts.authorize(namespace, name, actor, permission)
    state = timeline(request).state_as_of(namespace, name, point.position, point.time)
    if not state.live:
        raise ContextNotFoundError()
    return state


def list_as_of(request: Request[Any, Any, Any], namespace: str, point: AsOf) -> list[ContextState]:
    actor = caller(request)
    found = services(request)
    now = found.reads.list(namespace, None if actor == ADMIN else actor)
    names = {s.name for s in now} if actor != ADMIN else None
    states = timeline(request).namespace_as_of(namespace, point.position, point.time)
    return sorted((s for s in states if s.live and (names is None or s.name in names)),
                  key=lambda s: s.name)


def timeline(request: Request[Any, Any, Any]) -> TimelineReads:
    return services(request).timeline


class _Cursor(msgspec.Struct, frozen=True):
    g: int
    p: int


def _encode(cursor: _Cursor) -> str:
    return base64.urlsafe_b64encode(msgspec.json.encode(cursor)).decode().rstrip("=")


def _decode(raw: str) -> _Cursor | None:
    try:
        data = base64.urlsafe_b64decode(raw + "=" * (-len(raw) % 4))
        return msgspec.json.decode(data, type=_Cursor)
    except (binascii.Error, ValueError, msgspec.DecodeError, msgspec.ValidationError):
        return None


def _item(recorded: Recorded) -> dict[str, Any]:
    data = msgspec.to_builtins(recorded.event)
    assert isinstance(data, dict)
    for key in ("event", "at", "actor"):
        data.pop(key, None)
    return {"position": recorded.position, "time": format_timestamp(recorded.event.at),
            "name": event_name(recorded.event), "actor": recorded.event.actor, "data": data}


@get(PATH + "/history", opt={"query": ("limit", "cursor"), "permission": "administer"},
     responses=refusals({404: "no such context, or the caller may not administer it"}))
@threaded
def read_history(request: Request[Any, Any, Any], namespace: FromPath[str],
                 name: FromPath[str]) -> Response[HistoryPage]:
    """Every event of the context, in log order (requires administer)."""
    actor = caller(request)
    services(request).contexts.authorize(namespace, name, actor, "administer")
    limit: int | None = None
    raw_limit = request.query_params.get("limit")
    if raw_limit is not None:
        limit = int(raw_limit) if _POSITION.fullmatch(raw_limit) else 0
        if not 1 <= limit <= 1000:
            raise RequestInvalidError("limit must be between 1 and 1000")
    reads = timeline(request)
    since = reads.generation_start(namespace, name)
    after = 0
    raw_cursor = request.query_params.get("cursor")
    if raw_cursor is not None:
        cursor = _decode(raw_cursor)
        if cursor is None or cursor.g != since or cursor.p < 0:
            raise RequestInvalidError("invalid history cursor")
        after = cursor.p
    page = reads.events(namespace, name, after, None if limit is None else limit + 1, since)
    more = limit is not None and len(page) > limit
    page = page[:limit] if limit is not None else page
    body: dict[str, Any] = {"items": [_item(r) for r in page]}
    if more:
        body["nextCursor"] = _encode(_Cursor(since, page[-1].position))
    return json(body)


ROUTES = [read_history]

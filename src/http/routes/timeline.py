"""History for auditors: a context's events in log order, and reads as of a past point."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

import msgspec
from litestar import Request, Response, get
from litestar.params import FromPath

from context_service.contract.contexts import HistoryPage
from context_service.domain.context.state import ContextState
from context_service.domain.errors import ContextNotFoundError, RequestInvalidError
from context_service.domain.events import ADMIN, UnknownEvent
from context_service.domain.stream import Recorded
from context_service.domain.values import format_timestamp, parse_timestamp
from context_service.http import cursors
from context_service.http.common import (
    CATALOG,
    caller,
    json,
    services,
    threaded,
    wait_for_views,
)
from context_service.http.refusals import refusals
from context_service.projections.reads import CatalogEntry

_POSITION = re.compile(r"[0-9]{1,19}")
_PAGE_EVENTS = 1000  # a history page without ``limit``
_PAGE_BYTES = 4 * 1024 * 1024  # a page ends after the event that takes it past this many bytes
_CHUNK = 100  # events read from the log at a time

PATH = "/v1/namespaces/{namespace:str}/contexts/{name:str}"


class TimelineReads(Protocol):
    def events(self, namespace: str, name: str, after: int, limit: int | None,
               since: int) -> list[Recorded]:
        """At most ``limit`` events after ``after``, in log order; fewer does not mean the end
        (a read stops after a few MiB), none does."""

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


def visible(request: Request[Any, Any, Any], namespace: str, name: str, permission: str,
            views: Sequence[str] = CATALOG, history: bool = True) -> CatalogEntry:
    """The catalog entry of a live context the caller holds ``permission`` on, once ``views``
    have caught up with the log as of now. Judged on the catalog, not on this process's write
    model cache: a grant another replica revoked a moment ago is already in the log, and a
    cached state that never saw it would still let the caller read. Without ``history`` its
    state's revisions are left out (a route that never shows them need not decode them all)."""
    actor = caller(request)  # the subject header is checked first
    wait_for_views(request, views)
    entry = services(request).reads.get(namespace, name, history)
    if entry is None or permission not in entry.state.permissions_of(actor):
        raise ContextNotFoundError()
    return entry


def visible_as_of(request: Request[Any, Any, Any], namespace: str, name: str, point: AsOf,
                  permission: str) -> ContextState:
    """The context as of ``point``; the caller needs ``permission`` now, and sees only the
    current generation of the name: a context deleted before it was (re)created is someone
    else's past. The bootstrap administrator also sees contexts deleted since."""
    actor = caller(request)
    generation = None
    if actor != ADMIN:
        generation = visible(request, namespace, name, permission, history=False).state.generation
    state = timeline(request).state_as_of(namespace, name, point.position, point.time)
    if not state.live or generation not in (None, state.generation):
        raise ContextNotFoundError()
    return state


def list_as_of(request: Request[Any, Any, Any], namespace: str, point: AsOf) -> list[ContextState]:
    """The namespace's contexts as of ``point`` the caller holds any permission on now, each in
    its current generation (all of them, for the bootstrap administrator)."""
    actor = caller(request)
    found = services(request)
    now = found.reads.list(namespace, None if actor == ADMIN else actor)
    generations = {s.name: s.generation for s in now} if actor != ADMIN else None
    states = timeline(request).namespace_as_of(namespace, point.position, point.time)
    return sorted((s for s in states if s.live and (
        generations is None or generations.get(s.name) == s.generation)),
        key=lambda s: s.name)


def timeline(request: Request[Any, Any, Any]) -> TimelineReads:
    return services(request).timeline


class _Cursor(msgspec.Struct, frozen=True):
    g: int
    p: int


def issued_position(position: int, since: int) -> bool:
    """Whether a cursor of the generation created at ``since`` can hold ``position``: a page's
    last event is never before the creation, and a log position is a bigint."""
    return since <= position < 2**63


def _item(recorded: Recorded) -> dict[str, Any]:
    event = recorded.event
    # an event of a type this version does not know is listed as stored: its name and fields
    data = dict(event.fields) if isinstance(event, UnknownEvent) else msgspec.to_builtins(event)
    assert isinstance(data, dict)
    for key in ("event", "at", "actor"):
        data.pop(key, None)
    return {"position": recorded.position, "time": format_timestamp(event.at),
            "name": recorded.name, "actor": event.actor, "data": data}


@get(PATH + "/history", opt={"query": ("limit", "cursor"), "permission": "administer"},
     responses=refusals({404: "no such context, or the caller may not administer it"}))
@threaded
def read_history(request: Request[Any, Any, Any], namespace: FromPath[str],
                 name: FromPath[str]) -> Response[HistoryPage]:
    """Every event of the context, in log order (requires administer); a page holds at most
    ``limit`` events (1000 without), and ends early after a few MiB."""
    since = visible(request, namespace, name, "administer", history=False).created_position
    limit: int | None = None
    raw_limit = request.query_params.get("limit")
    if raw_limit is not None:
        limit = int(raw_limit) if _POSITION.fullmatch(raw_limit) else 0
        if not 1 <= limit <= 1000:
            raise RequestInvalidError("limit must be between 1 and 1000")
    after = 0
    raw_cursor = request.query_params.get("cursor")
    if raw_cursor is not None:
        cursor = cursors.decode(raw_cursor, _Cursor)
        if cursor is None or cursor.g != since or not issued_position(cursor.p, since):
            raise RequestInvalidError("invalid history cursor")
        after = cursor.p
    items, last = _page(timeline(request), namespace, name, after, since,
                        _PAGE_EVENTS if limit is None else limit)
    body: dict[str, Any] = {"items": items}
    if last is not None:
        body["nextCursor"] = cursors.encode(_Cursor(since, last))
    return json(body)


def _page(reads: TimelineReads, namespace: str, name: str, after: int, since: int,
          limit: int) -> tuple[list[dict[str, Any]], int | None]:
    """Up to ``limit`` events after ``after``, read a chunk at a time and ending after the event
    that takes the page past ``_PAGE_BYTES``; with the position of the page's last event when
    more follow (None when the page ends the history). A chunk can hold fewer events than
    asked for (the reads stop after a few MiB): only an empty one ends the history."""
    items: list[dict[str, Any]] = []
    size = 0
    while chunk := reads.events(namespace, name, after, _CHUNK, since):
        for recorded in chunk:
            if len(items) == limit or size > _PAGE_BYTES:
                return items, after
            item = _item(recorded)
            items.append(item)
            size += len(msgspec.json.encode(item))
            after = recorded.position
    return items, None


ROUTES = [read_history]

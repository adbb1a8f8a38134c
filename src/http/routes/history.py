"""Revisions (spec 1.6) and audit (spec 1.10) of a context."""

from __future__ import annotations

import base64
import functools
import re
from typing import Any

import msgspec
from litestar import Request, Response, get, post
from litestar.params import FromPath, JSONBody

from context_service.contract.contexts import (
    AuditPage,
    ContextResource,
    PublishRevisionRequest,
    RevisionList,
)
from context_service.domain.context.commands import PublishRevision
from context_service.domain.context.events import SourceRef
from context_service.domain.errors import RequestInvalidError
from context_service.http import cursors, render
from context_service.http.body import timestamp
from context_service.http.common import (
    CATALOG,
    caller,
    json,
    services,
    threaded,
)
from context_service.http.refusals import refusals
from context_service.http.routes.timeline import issued_position, visible
from context_service.http.sent import NOTHING, Sent, SentBody
from context_service.http.streamed_pages import START, History, Key, every_item
from context_service.projections.reads import (
    AuditEntry,
    ContextReads,
    RevisionEntry,
)

PATH = "/v1/namespaces/{namespace:str}/contexts/{name:str}"
_INTEGER = re.compile(r"[+-]?[0-9]{1,20}")  # bounded: int() refuses 4,300 digits


@get(PATH + "/revisions", opt={"permission": "read"},
     responses=refusals({404: "no such context, or the caller may not read it"}))
@threaded
def list_revisions(request: Request[Any, Any, Any], namespace: FromPath[str],
                   name: FromPath[str]) -> Response[RevisionList]:
    """List published revisions, oldest first (requires read; streamed when longer than a
    page)."""
    since = visible(request, namespace, name, "read", (*CATALOG, "revision_history"),
                    history=False).created_position
    reads = services(request).reads
    return every_item(History(
        last=functools.partial(reads.revisions_last, namespace, name, since),
        page=lambda past, through, size: reads.revisions(namespace, name, since, past, size,
                                                         through),
        key=_key, render=_rendered_revision, what="revision history"))


def _key(entry: AuditEntry | RevisionEntry) -> Key:
    """Where an entry of a history stands: the order both histories are kept and paged in."""
    return entry.position, entry.seq


def _rendered_revision(entry: RevisionEntry) -> dict[str, Any]:
    return render.revision(entry.revision)


@post(PATH + "/revisions", status_code=201, dto=SentBody, opt={"permission": "write"},
      responses=refusals({404: "no such context, or the caller may not write it"}))
async def publish_revision(request: Request[Any, Any, Any], namespace: FromPath[str],
                           name: FromPath[str],
                           data: JSONBody[Sent[PublishRevisionRequest]] = NOTHING,
                           ) -> Response[ContextResource]:
    """Publish a verified revision (requires write; the body is validated first)."""
    actor = caller(request)
    req = data.decode(refuse_nul=True)
    created_at = timestamp(req.created_at, "createdAt")
    sources = tuple(SourceRef(s.context or "", s.type or "", s.revision or "")
                    for s in req.sources or ())
    command = PublishRevision(
        actor=actor, id=req.id or "", created_at=created_at, operation=req.operation or "",
        producer=req.producer or "", parameters=dict(req.parameters or {}), sources=sources,
        files=req.files or 0, bytes=req.bytes or 0)
    outcome = await services(request).contexts.execute_async(namespace, name, command)
    return json(render.context(outcome.state), 201, outcome.position)


class _AuditCursor(msgspec.Struct, frozen=True):
    s: str  # stream id
    g: int  # creation position of the context generation
    p: int  # last position returned
    q: int = 0  # its sequence within that position's event (an integer column)


def _decode_cursor(raw: str) -> _AuditCursor | None:
    """The cursor ``raw`` spells, only in a spelling the route has written (``_spellings``)."""
    cursor = cursors.fields(raw, _AuditCursor)
    return cursor if cursor is not None and raw in _spellings(cursor) else None


def _spellings(cursor: _AuditCursor) -> tuple[str, ...]:
    """Every way the route has written ``cursor``: today's, and without ``q`` (cursors issued
    before entries had a sequence, whose ``q`` is 0, stay valid)."""
    if cursor.q:
        return (cursors.encode(cursor),)
    legacy = msgspec.json.encode({"s": cursor.s, "g": cursor.g, "p": cursor.p})
    return cursors.encode(cursor), base64.urlsafe_b64encode(legacy).decode().rstrip("=")


def _names_an_entry(reads: ContextReads, namespace: str, name: str, since: int,
                    cursor: _AuditCursor) -> bool:
    """Whether the audit of the generation created at ``since`` holds an entry at exactly the
    cursor's (position, sequence), as the last entry of a page this route returned does. A
    cursor past the log's head or between entries would skip the events recorded there."""
    found = reads.audit(namespace, name, since, (cursor.p, cursor.q - 1), 1)
    return bool(found) and (found[0].position, found[0].seq) == (cursor.p, cursor.q)


def _audit_limit(raw: str | None) -> int | None:
    """``limit``: a plain decimal integer from 1 to 1000 (``int()`` would also take ``1_0``)."""
    if raw is None:
        return None
    limit = int(raw) if _INTEGER.fullmatch(raw) else 0
    if not 1 <= limit <= 1000:
        raise RequestInvalidError("limit must be between 1 and 1000")
    return limit


@get(PATH + "/audit", opt={"query": ("limit", "cursor"), "permission": "administer"},
     responses=refusals({404: "no such context, or the caller may not administer it"}))
@threaded
def read_audit(request: Request[Any, Any, Any], namespace: FromPath[str],
               name: FromPath[str]) -> Response[AuditPage]:
    """Read the audit history, oldest first, paged with limit and cursor (without limit:
    every event after the cursor, streamed when longer than a page)."""
    entry = visible(request, namespace, name, "administer", (*CATALOG, "audit_log"),
                    history=False)
    limit = _audit_limit(request.query_params.get("limit"))
    state, since = entry.state, entry.created_position
    stream_id = str(state.namespace) + "/" + str(state.name)
    after = START
    reads = services(request).reads
    raw_cursor = request.query_params.get("cursor")
    if raw_cursor is not None:
        cursor = _decode_cursor(raw_cursor)
        if (cursor is None or cursor.s != stream_id or cursor.g != since
                or not issued_position(cursor.p, since) or not 0 <= cursor.q < 2**31
                or not _names_an_entry(reads, namespace, name, since, cursor)):
            raise RequestInvalidError("invalid audit cursor")
        after = (cursor.p, cursor.q)
    if limit is None:  # every event after the cursor (spec 1.10), streamed past a page
        return every_item(History(
            last=functools.partial(reads.audit_last, namespace, name, since),
            page=lambda past, through, size: reads.audit(namespace, name, since, past, size,
                                                         through),
            key=_key, render=render.audit_event, what="audit log"), after)
    page = reads.audit(namespace, name, since, after, limit + 1)
    body: dict[str, Any] = {"items": [render.audit_event(e) for e in page[:limit]]}
    if len(page) > limit:
        last = page[limit - 1]
        body["nextCursor"] = cursors.encode(_AuditCursor(stream_id, since, last.position,
                                                         last.seq))
    return json(body)


ROUTES = [list_revisions, publish_revision, read_audit]

"""Grants and consumers of a context (spec 1.8, 1.9)."""

from __future__ import annotations

from typing import Any

import msgspec
from litestar import Request, Response, delete, get, put
from litestar.params import RawBody

from context_service.domain.context.commands import (
    AttachConsumer,
    DetachConsumer,
    GrantAccess,
    RevokeAccess,
)
from context_service.domain.errors import RequestInvalidError
from context_service.domain.events import Subject
from context_service.http import render
from context_service.http.body import check_present, decode, timestamp
from context_service.http.common import CATALOG, caller, json, services, threaded, wait_for_views
from context_service.http.routes.timeline import as_of, visible_as_of
from context_service.http.schemas import ConsumerRequest, SetGrantRequest, SubjectBody

PATH = "/v1/namespaces/{namespace:str}/contexts/{name:str}"


def _subject(body: SubjectBody | None) -> Subject | None:
    if body is None:
        return None
    return Subject(body.kind or "", body.name or "")


@get(PATH + "/grants", opt={"query": ("asOf", "asOfPosition")})
@threaded
def list_grants(request: Request[Any, Any, Any]) -> Response[bytes]:
    """List the grants of a context (requires administer)."""
    namespace = request.path_params["namespace"]
    name = request.path_params["name"]
    actor = caller(request)
    point = as_of(request)
    if point is not None:
        state = visible_as_of(request, namespace, name, point, "administer")
        return json({"items": [render.grant(g) for g in state.grants]})
    services(request).contexts.authorize(namespace, name, actor, "administer")
    wait_for_views(request, CATALOG)
    entry = services(request).reads.get(namespace, name)
    grants = entry.state.grants if entry is not None else ()
    return json({"items": [render.grant(g) for g in grants]})


@put(PATH + "/grants", opt={"body": SetGrantRequest})
async def set_grant(request: Request[Any, Any, Any]) -> Response[bytes]:
    """Set (replace or add) the grant of one subject (requires administer)."""
    body = await request.body()  # cheaper than a RawBody parameter on this hot path
    namespace = request.path_params["namespace"]
    name = request.path_params["name"]
    actor = caller(request)
    found = services(request)
    await found.contexts.authorize_async(namespace, name, actor, "administer")
    req = decode(body, SetGrantRequest, refuse_nul=True)
    timestamp(req.created_at, "createdAt")  # may be sent; it is ignored
    command = GrantAccess(actor=actor, subject=_subject(req.subject),
                          permissions=tuple(req.permissions or ()))
    outcome = await found.contexts.execute_async(namespace, name, command)
    return json(render.context(outcome.state), 200, outcome.position)


@delete(PATH + "/grants", status_code=200, opt={"body": SubjectBody})
@threaded
def revoke_grant(request: Request[Any, Any, Any], body: RawBody) -> Response[bytes]:
    """Revoke the grant of one subject (requires administer)."""
    namespace = request.path_params["namespace"]
    name = request.path_params["name"]
    actor = caller(request)
    found = services(request)
    found.contexts.authorize(namespace, name, actor, "administer")
    check_present(body)
    try:
        req = msgspec.json.decode(body, type=SubjectBody, strict=True)
    except (msgspec.ValidationError, msgspec.DecodeError) as exc:
        raise RequestInvalidError("valid subject is required") from exc
    command = RevokeAccess(actor=actor, subject=Subject(req.kind or "", req.name or ""))
    outcome = found.contexts.execute(namespace, name, command)
    return json(render.context(outcome.state), 200, outcome.position)


@get(PATH + "/consumers")
@threaded
def list_consumers(request: Request[Any, Any, Any]) -> Response[bytes]:
    """List declared and observed consumers (requires read)."""
    namespace = request.path_params["namespace"]
    name = request.path_params["name"]
    actor = caller(request)
    services(request).contexts.authorize(namespace, name, actor, "read")
    wait_for_views(request, CATALOG)
    entry = services(request).reads.get(namespace, name)
    consumers = entry.state.consumers() if entry is not None else []
    return json({"items": [render.consumer(c) for c in consumers]})


def _consumer_command(request: Request[Any, Any, Any], namespace: str, name: str, body: bytes,
                      attach: bool) -> Response[bytes]:
    actor = caller(request)
    found = services(request)
    found.contexts.authorize(namespace, name, actor, "attach")
    req = decode(body, ConsumerRequest, refuse_nul=True)
    timestamp(req.since, "since")  # may be sent; it is overwritten
    subject = _subject(req.subject)
    command: AttachConsumer | DetachConsumer
    if attach:
        command = AttachConsumer(actor=actor, subject=subject, kind=req.kind or "",
                                 name=req.name or "", access_mode=req.access_mode or "",
                                 active=bool(req.active))
    else:
        command = DetachConsumer(actor=actor, subject=subject, kind=req.kind or "",
                                 name=req.name or "")
    outcome = found.contexts.execute(namespace, name, command)
    return json(render.context(outcome.state), 200, outcome.position)


@put(PATH + "/consumers", opt={"body": ConsumerRequest})
@threaded
def attach_consumer(request: Request[Any, Any, Any], body: RawBody) -> Response[bytes]:
    """Attach (declare) a consumer (requires attach)."""
    namespace = request.path_params["namespace"]
    name = request.path_params["name"]
    return _consumer_command(request, namespace, name, body, attach=True)


@delete(PATH + "/consumers", status_code=200,
        opt={"body": ConsumerRequest})
@threaded
def detach_consumer(request: Request[Any, Any, Any], body: RawBody) -> Response[bytes]:
    """Detach a declared consumer (requires attach)."""
    namespace = request.path_params["namespace"]
    name = request.path_params["name"]
    return _consumer_command(request, namespace, name, body, attach=False)


ROUTES = [list_grants, set_grant, revoke_grant, list_consumers, attach_consumer, detach_consumer]

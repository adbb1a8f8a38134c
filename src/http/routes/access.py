"""Grants and consumers of a context (spec 1.8, 1.9)."""

from __future__ import annotations

from typing import Any

import msgspec
from litestar import Request, Response, delete, get, put
from litestar.params import FromPath, JSONBody

from context_service.contract.contexts import (
    AttachConsumerRequest,
    ConsumerList,
    ContextResource,
    DetachConsumerRequest,
    GrantList,
    SetGrantRequest,
    SubjectRequest,
)
from context_service.domain.context.commands import (
    AttachConsumer,
    DetachConsumer,
    GrantAccess,
    RevokeAccess,
)
from context_service.domain.errors import DomainError, RequestInvalidError
from context_service.domain.events import Subject
from context_service.http import render
from context_service.http.body import timestamp
from context_service.http.common import caller, json, services, threaded
from context_service.http.refusals import refusals
from context_service.http.routes.timeline import as_of, visible, visible_as_of
from context_service.http.sent import NOTHING, Sent, SentBody

PATH = "/v1/namespaces/{namespace:str}/contexts/{name:str}"
_ADMINISTER = refusals({404: "no such context, or the caller may not administer it"})
_ATTACH = refusals({404: "no such context, or the caller may not attach to it (nor administer "
                         "it, for another subject; nor write it, for readWrite)"})


def _subject(body: SubjectRequest | None) -> Subject | None:
    if body is None:
        return None
    return Subject(body.kind or "", body.name or "")


@get(PATH + "/grants", opt={"query": ("asOf", "asOfPosition"), "permission": "administer"},
     responses=_ADMINISTER)
@threaded
def list_grants(request: Request[Any, Any, Any], namespace: FromPath[str],
                name: FromPath[str]) -> Response[GrantList]:
    """List the grants of a context (requires administer)."""
    caller(request)  # the subject header is checked before the query
    point = as_of(request)
    if point is not None:
        state = visible_as_of(request, namespace, name, point, "administer")
        return json({"items": [render.grant(g) for g in state.grants]})
    grants = visible(request, namespace, name, "administer", history=False).state.grants
    return json({"items": [render.grant(g) for g in grants]})


@put(PATH + "/grants", dto=SentBody, opt={"permission": "administer"}, responses=_ADMINISTER)
async def set_grant(request: Request[Any, Any, Any], namespace: FromPath[str],
                    name: FromPath[str], data: JSONBody[Sent[SetGrantRequest]] = NOTHING,
                    ) -> Response[ContextResource]:
    """Set (replace or add) the grant of one subject (requires administer)."""
    actor = caller(request)
    found = services(request)
    await found.contexts.authorize_async(namespace, name, actor, "administer")
    try:
        req = data.decode(refuse_nul=True)
        timestamp(req.created_at, "createdAt")  # may be sent; it is ignored
    except DomainError:
        # the pre-check read this process's cache, which a revocation by another replica may
        # not have reached: the body is refused only to a caller the log confirms. A well-formed
        # grant needs no such read: decided on a stale cache, it cannot commit (its append is at
        # the cached version) and is decided again on the log
        await found.contexts.authorize_async(namespace, name, actor, "administer", fresh=True)
        raise
    command = GrantAccess(actor=actor, subject=_subject(req.subject),
                          permissions=tuple(req.permissions or ()))
    outcome = await found.contexts.execute_async(namespace, name, command)
    return json(render.context(outcome.state), 200, outcome.position)


@delete(PATH + "/grants", status_code=200, dto=SentBody, opt={"permission": "administer"},
        responses=refusals({404: "no such context or grant, or the caller may not administer "
                                 "the context"}))
@threaded
def revoke_grant(request: Request[Any, Any, Any], namespace: FromPath[str], name: FromPath[str],
                 data: JSONBody[Sent[SubjectRequest]] = NOTHING) -> Response[ContextResource]:
    """Revoke the grant of one subject (requires administer)."""
    actor = caller(request)
    found = services(request)
    found.contexts.authorize(namespace, name, actor, "administer")
    body = data.present()
    try:
        req = msgspec.json.decode(body, type=SubjectRequest, strict=True)
    except (msgspec.ValidationError, msgspec.DecodeError) as exc:
        raise RequestInvalidError("valid subject is required") from exc
    command = RevokeAccess(actor=actor, subject=Subject(req.kind or "", req.name or ""))
    outcome = found.contexts.execute(namespace, name, command)
    return json(render.context(outcome.state), 200, outcome.position)


@get(PATH + "/consumers", opt={"permission": "read"},
     responses=refusals({404: "no such context, or the caller may not read it"}))
@threaded
def list_consumers(request: Request[Any, Any, Any], namespace: FromPath[str],
                   name: FromPath[str]) -> Response[ConsumerList]:
    """List declared and observed consumers (requires read)."""
    consumers = visible(request, namespace, name, "read", history=False).state.consumers()
    return json({"items": [render.consumer(c) for c in consumers]})


def _consumer_command(request: Request[Any, Any, Any], namespace: str, name: str,
                      data: Sent[AttachConsumerRequest] | Sent[DetachConsumerRequest],
                      attach: bool) -> Response[ContextResource]:
    actor = caller(request)
    found = services(request)
    found.contexts.authorize(namespace, name, actor, "attach")
    req = data.decode(refuse_nul=True)
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


@put(PATH + "/consumers", dto=SentBody, opt={"permission": "attach"}, responses=_ATTACH)
@threaded
def attach_consumer(request: Request[Any, Any, Any], namespace: FromPath[str],
                    name: FromPath[str], data: JSONBody[Sent[AttachConsumerRequest]] = NOTHING,
                    ) -> Response[ContextResource]:
    """Attach (declare) a consumer (requires attach)."""
    return _consumer_command(request, namespace, name, data, attach=True)


@delete(PATH + "/consumers", status_code=200, dto=SentBody, opt={"permission": "attach"},
        responses=_ATTACH)
@threaded
def detach_consumer(request: Request[Any, Any, Any], namespace: FromPath[str],
                    name: FromPath[str], data: JSONBody[Sent[DetachConsumerRequest]] = NOTHING,
                    ) -> Response[ContextResource]:
    """Detach a declared consumer (requires attach)."""
    return _consumer_command(request, namespace, name, data, attach=False)


ROUTES = [list_grants, set_grant, revoke_grant, list_consumers, attach_consumer, detach_consumer]

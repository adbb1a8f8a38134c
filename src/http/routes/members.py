"""Workspace membership (agent-context-api.md §3.3): list, add or change, remove members.

These are ``/v1`` routes: ``{"error","message"}`` bodies, and a non-member or a member lacking
the permission is told ``workspace not found``.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote_to_bytes

from litestar import Request, Response, delete, get, put
from litestar.params import FromPath, JSONBody

from context_service.contract.workspaces import Member as MemberAnswer
from context_service.contract.workspaces import MemberList, SetMemberRequest
from context_service.domain.context.validation import valid_subject
from context_service.domain.errors import RequestInvalidError
from context_service.domain.events import Subject
from context_service.domain.values import format_timestamp
from context_service.domain.workspace.commands import RemoveMember, SetMember
from context_service.domain.workspace.state import Member
from context_service.http.common import caller, json, no_content, services, threaded, wait_for_views
from context_service.http.errors import HttpError
from context_service.http.ports import AgentServices
from context_service.http.refusals import refusals
from context_service.http.render import subject as render_subject
from context_service.http.sent import NOTHING, Sent, SentBody

PATH = "/v1/namespaces/{namespace:str}/members"
VIEWS = ("workspace_members",)


def render_member(member: Member) -> dict[str, Any]:
    return {"subject": render_subject(member.subject), "role": member.role,
            "since": format_timestamp(member.since)}


def _agent(request: Request[Any, Any, Any]) -> AgentServices:
    found = services(request).agent
    assert found is not None
    return found


HIDDEN = "no such workspace, or the caller lacks the route's permission"


@get(PATH, opt={"permission": "context:read"}, responses=refusals({404: HIDDEN}))
@threaded
def list_members(request: Request[Any, Any, Any],
                 namespace: FromPath[str]) -> Response[MemberList]:
    """The workspace's members, sorted by ``kind:name`` (any member; context:read)."""
    actor = caller(request)
    agent = _agent(request)
    # on the log now: a membership another replica removed a moment ago counts
    agent.workspaces.authorize(namespace, actor, "context:read", fresh=True)
    wait_for_views(request, VIEWS)
    return json({"items": [render_member(m) for m in agent.reads.members(namespace)]})


@put(PATH, dto=SentBody, opt={"permission": "members:manage"},
     responses=refusals({404: HIDDEN, 409: "the workspace would be left without an owner"}))
@threaded
def set_member(request: Request[Any, Any, Any], namespace: FromPath[str],
               data: JSONBody[Sent[SetMemberRequest]] = NOTHING) -> Response[MemberAnswer]:
    """Add a member or change its role (members:manage)."""
    actor = caller(request)
    agent = _agent(request)
    agent.workspaces.authorize(namespace, actor, "members:manage", fresh=True)
    req = data.decode()
    subject = None if req.subject is None else Subject(req.subject.kind or "",
                                                       req.subject.name or "")
    outcome = agent.workspaces.execute(namespace, SetMember(actor=actor, subject=subject,
                                                            role=req.role or ""))
    assert subject is not None
    return json(render_member(outcome.state.members[subject.key]), 200, outcome.position)


def _member_segment(request: Request[Any, Any, Any]) -> Subject | None:
    """The raw segment after ``/v1/namespaces/<namespace>/members/``, percent-decoded and split
    at its first ``:`` (a ``/`` inside the name arrives as ``%2F``, so it is read from the raw
    path; a raw ``/`` makes another, unknown path). The namespace is one raw segment whatever
    it is called, ``members`` included."""
    raw = (request.scope.get("raw_path") or b"").split(b"?", 1)[0]
    _, found, rest = raw.partition(b"/v1/namespaces/")
    parts = rest.split(b"/", 2)
    segment = parts[2] if found and len(parts) == 3 and parts[1] == b"members" else b""
    if b"/" in segment or not segment:
        raise HttpError(404, "not_found", "route not found")
    try:  # bytes that are no UTF-8 name no subject (replaced, they named another one)
        text = unquote_to_bytes(segment).decode("utf-8")
    except UnicodeDecodeError:
        return None
    kind, sep, name = text.partition(":")
    subject = Subject(kind, name)
    return subject if sep and valid_subject(subject) else None


@delete(PATH + "/{member:path}", status_code=204, opt={"permission": "members:manage"},
        responses=refusals({404: "no such workspace or member, or the caller lacks "
                                 "members:manage",
                            409: "the workspace would be left without an owner"}))
@threaded
def remove_member(request: Request[Any, Any, Any], namespace: FromPath[str],
                  member: FromPath[str]) -> Response[None]:
    """Remove a member (members:manage)."""
    # read from the raw path (``member`` is decoded); routing first: a raw "/" is another path
    subject = _member_segment(request)
    actor = caller(request)
    agent = _agent(request)
    agent.workspaces.authorize(namespace, actor, "members:manage", fresh=True)
    if subject is None:
        raise RequestInvalidError("valid subject is required")
    outcome = agent.workspaces.execute(namespace, RemoveMember(actor=actor, subject=subject))
    return no_content(outcome.position)


ROUTES = [list_members, set_member, remove_member]

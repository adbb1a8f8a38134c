"""The replay route (agent-context-api.md §8): ``verify`` rebuilds each recorded item from the
current state and compares hashes; ``recompute`` rebuilds the whole pack at the recorded
position and valid time and diffs it. Each run is recorded as ``ContextPackReplayed``.

Access is always the calling credential's access now.
"""

from __future__ import annotations

import time
from typing import Any

import msgspec
from litestar import Request, Response, post
from litestar.params import FromPath

from context_service.contract.agent import (
    Replay,
    ReplayRequest,
)
from context_service.contract.agent_errors import (
    SHARED_ERRORS,
    ReplayExpired,
    ReplayTaskMismatch,
)
from context_service.domain.context_pack.commands import RecordReplay
from context_service.domain.context_pack.errors import ReplayExpiredError, ReplayNotFoundError
from context_service.domain.context_pack.events import ContextPackReleased, ContextPackReplayed
from context_service.domain.context_pack.readable import BoundToOtherSetError, Readable
from context_service.domain.context_set.state import ContextSetState
from context_service.domain.pack.items import Source
from context_service.domain.pack.model import ENGINE_VERSION, NamespaceAt
from context_service.domain.pack.render import pack_body
from context_service.domain.pack.replay import (
    CurrentState,
    RecordedItem,
    diff,
    recompute_scope,
    verification_json,
    verify,
)
from context_service.domain.pack.request import AsOf, PackRequest, task_sha256
from context_service.domain.values import format_timestamp
from context_service.http.agent import packs_shapes as shapes
from context_service.http.agent.body import decode
from context_service.http.agent.errors import ApiError, api_json
from context_service.http.agent.late_body import PendingBody, body_after_pipeline
from context_service.http.agent.pack_flow import (
    SCOPE,
    VIEWS,
    Access,
    ReleaseAccess,
    Timings,
    build_pack,
    readable_at,
)
from context_service.http.agent.pack_services import PackServices, loaded_corpus, pack_services
from context_service.http.agent.pipeline import (
    ACCESS_VIEWS,
    AgentCaller,
    agent_services,
    authenticate,
    recheck,
)
from context_service.http.common import wait_for_views
from context_service.http.refusals import refusals
from context_service.projections.context_pack_replays.view import ReplayRecord

PATH = "/api/agent/v1/replays/{replayId:str}"
ERRORS = refusals(
    {400: "INVALID_REQUEST or VALIDATION_ERROR (recompute without task included)",
     401: "UNAUTHORIZED or EXPIRED_CREDENTIAL",
     403: "AGENT_BROWSER_REQUEST_REFUSED, FORBIDDEN (scope; recompute of another "
          "context set's pack by a bound credential) or AGENT_CREDENTIAL_AUTHORITY_LOST",
     404: "NOT_FOUND: replay not found (unknown or of another workspace)",
     409: "AGENT_REPLAY_TASK_MISMATCH", 410: "AGENT_REPLAY_EXPIRED",
     429: "RATE_LIMITED (Retry-After)",
     503: "SERVICE_UNAVAILABLE: the views could not catch up with the log in time"},
    {**SHARED_ERRORS, 409: ReplayTaskMismatch, 410: ReplayExpired})


def recorded_items(release: ContextPackReleased) -> list[RecordedItem]:
    return [RecordedItem(id=i.id, cls=i.class_, hash=i.hash, source=Source(
        kind=i.source.kind, collection_id=i.source.collection_id,
        document_id=i.source.document_id, record_id=i.source.record_id,
        revision=i.source.revision, context_set_id=i.source.context_set_id,
        context_set_version=i.source.context_set_version)) for i in release.items]


def _run(caller: AgentCaller, release: ContextPackReleased, mode: str, position: int,
         merkle_root: str, **counts: int) -> ContextPackReplayed:
    values = {"unchanged": 0, "changed": 0, "unavailable": 0, "added": 0, "removed": 0,
              **counts}
    return ContextPackReplayed(
        at=release.at, actor=caller.creator.key, replay_id=release.replay_id, mode=mode,
        credential_id=caller.credential.id, created_by=caller.creator.key, position=position,
        engine_version=ENGINE_VERSION, merkle_root=merkle_root, **values)


def _record(packs: PackServices, caller: AgentCaller, run: ContextPackReplayed) -> int:
    try:
        outcome = packs.commands.execute(caller.workspace, run.replay_id,
                                         RecordReplay(run=run))
    except ReplayNotFoundError as exc:
        raise ApiError(404, "NOT_FOUND", exc.message) from exc
    except ReplayExpiredError as exc:
        raise ApiError(410, "AGENT_REPLAY_EXPIRED", exc.message) from exc
    return outcome.position


def _recorded_set(packs: PackServices, access: Access,
                  found: ReplayRecord) -> ContextSetState | None:
    """The set the released pack worked in, as the release read it (an unknown one: empty).
    Its version in force at P comes from the namespace at P whatever is given here (§7.4).
    A set with no version at P (``contextSetVersion`` 0) gave the pack its collections of the
    time of the release, which P does not pin: they are the set folded to the release's own
    position in the log, not the set now, so a version recorded since changes neither a
    recompute (§8.2: the position pins every input but access) nor what ``verify`` weighs."""
    p = found.release.parameters
    if not p.context_set_id:
        return None
    if p.context_set_version == 0:
        at_release = packs.configured().inputs.namespace_at(access.caller.workspace,
                                                            found.position)
        if (released := at_release.sets.get(p.context_set_id)) is not None:
            return released
    return access.sets()(p.context_set_id) or ContextSetState(id=p.context_set_id)


def _read_now(access: Access, release: ContextPackReleased, active: ContextSetState | None,
              at_p: NamespaceAt, readable: Readable) -> set[str]:
    """The collections the released pack read, as a recompute resolves them (the namespace at
    the recorded position, its recorded filter, its set ``active`` as the release read it, the
    caller's access now, rule 5 for the generation that lived then). A release records an
    item's anchor collection only, so a graph fact or a passage's contradiction flag can join
    a record of a collection no recorded item names: verify weighs these as the pack did, and
    no collection the pack could not have read (one created since, a name taken again since,
    one admitted since, one its set names only since) joins them."""
    p = release.parameters
    request = PackRequest(task="", collection_ids=p.collection_ids,
                          context_set_id=p.context_set_id)
    scope = recompute_scope(at_p, request, active, readable_at(access, at_p, readable))
    return {c.name for c in scope.usable}


def _verify(packs: PackServices, access: Access, found: ReplayRecord,
            head: int) -> tuple[dict[str, Any], ContextPackReplayed]:
    caller, release = access.caller, found.release
    ports = packs.configured()
    position, _ = ports.inputs.resolve(caller.workspace, head, None)
    ns = ports.inputs.namespace_at(caller.workspace, position)
    items = recorded_items(release)
    readable = access.readable()
    # the collections the recorded items name and those the pack read, that the caller reads
    # now: an item of another is unavailable, and its records are no evidence of a
    # contradiction either (§8: a replay never shows anything the caller could not read
    # today, a hash included)
    named = sorted({i.source.collection_id for i in items if i.source.collection_id
                    and i.source.collection_id in readable}
                   | _read_now(access, release, _recorded_set(packs, access, found),
                               ports.inputs.namespace_at(caller.workspace, release.position),
                               readable))
    corpus = loaded_corpus(access.request, ports,
                           [ns.collections[c] for c in named if c in ns.collections])
    get = access.sets()
    sets = {sid: now for sid in {i.source.context_set_id for i in items
                                 if i.source.context_set_id}
            if (now := get(sid)) is not None}
    state = CurrentState(ns=ns, corpus=corpus, sets=sets, valid_time=release.valid_time,
                         readable_now=readable.__contains__,
                         bound_set=caller.context_set_id)
    checked = verify(items, release.merkle_root, state)
    run = _run(caller, release, "verify", position, checked.current_merkle_root,
               unchanged=checked.unchanged, changed=checked.changed,
               unavailable=checked.unavailable)
    return verification_json(release.replay_id, position, checked), run


def _documents_in_order(release: ContextPackReleased) -> tuple[str, ...]:
    """The recorded ``documentIds`` (distinct and sorted, as the canonical request has them),
    those the pack reported missing first, in the order it reported them: request order
    (§7.10), which the recomputed ``missing`` repeats, so an unchanged pack keeps its packId."""
    reported = [m.document_id for m in release.missing if m.kind == "document"]
    return tuple(dict.fromkeys([*reported, *release.parameters.document_ids]))


def _recompute(packs: PackServices, access: Access, found: ReplayRecord,
               task: str | None) -> tuple[dict[str, Any], ContextPackReplayed]:
    caller, release = access.caller, found.release
    if task is None:
        raise shapes.recompute_needs_task()
    if task_sha256(task) != release.task_sha256:
        raise ApiError(409, "AGENT_REPLAY_TASK_MISMATCH",
                       "task does not match the recorded task hash")
    p = release.parameters
    bound = caller.context_set_id
    if p.context_set_id and bound and p.context_set_id != bound:
        raise ApiError(403, "FORBIDDEN", BoundToOtherSetError(bound).message)
    active = _recorded_set(packs, access, found)
    request = PackRequest(task=task, max_tokens=p.max_tokens, max_latency_ms=p.max_latency_ms,
                          coverage=p.coverage, collection_ids=p.collection_ids,
                          document_ids=_documents_in_order(release), sources=p.sources,
                          retrieval=p.retrieval, context_set_id=p.context_set_id)
    as_of = AsOf(valid_time=release.valid_time, system_time=release.system_time,
                 position=release.position)
    timings = Timings()
    pack, _ = build_pack(packs, access, request, active, as_of, timings,
                         time.monotonic() + p.max_latency_ms / 1000, ReleaseAccess(access),
                         recompute_scope)
    changes = diff(recorded_items(release), pack)
    body = {"replayId": release.replay_id, "mode": "recompute",
            "engineVersion": {"recorded": release.engine_version, "current": ENGINE_VERSION},
            "pack": pack_body(pack),
            "diff": {"added": list(changes.added), "removed": list(changes.removed),
                     "changed": list(changes.changed), "unchanged": changes.unchanged}}
    run = _run(caller, release, "recompute", release.position, pack.merkle_root,
               unchanged=changes.unchanged, changed=len(changes.changed),
               added=len(changes.added), removed=len(changes.removed))
    return body, run


@post(PATH, status_code=200, opt={"body": ReplayRequest}, responses=ERRORS)
@body_after_pipeline
def replay(request: Request[Any, Any, Any], body: PendingBody,
           replayId: FromPath[str]) -> Response[Replay]:
    """Verify a released pack's items against the current state, or recompute the pack."""
    packs = pack_services(request)
    head = packs.head()
    caller = authenticate(request, SCOPE, (*VIEWS, *packs.wait_views()), head)
    req = decode(body, ReplayRequest)
    mode = shapes.check_replay(req)
    found = packs.replays.get(caller.workspace, replayId)
    if found is None:
        raise ApiError(404, "NOT_FOUND", "replay not found")
    release = found.release
    if agent_services(request).clock() >= release.expires_at:
        raise ApiError(410, "AGENT_REPLAY_EXPIRED",
                       f"replay {replayId} expired at {format_timestamp(release.expires_at)}")
    access = Access(request, caller)
    if mode == "verify":
        answer, run = _verify(packs, access, found, head)
    else:
        answer, run = _recompute(packs, access, found, req.task)
    # the caller's access now, up to the answer (§8), as at a pack's release (§7.9): a
    # credential revoked, or a creator who lost the permission, while the replay waited for
    # its corpus or rebuilt a pack (texts included) gets the answer of §1.5 steps 2-4, and no
    # run is recorded in its name
    wait_for_views(request, ACCESS_VIEWS)
    recheck(request, caller, SCOPE)
    position = _record(packs, caller, msgspec.structs.replace(
        run, at=agent_services(request).clock()))
    return api_json(answer, position=position)


ROUTES = [replay]

"""Context lifecycle (spec 1.11): snapshots, clones, restore, retention, GC and capabilities.

Access checks and the state decisions start from are the catalog document (the folded context,
snapshots included), read-your-writes; writes go through the context aggregate, which checks
again as it commits. Only class resolution and name checks ask the cluster.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

from litestar import Request, Response, get, post, put
from litestar.params import FromPath, JSONBody

from context_service.contract.contexts import ContextResource
from context_service.contract.lifecycle import (
    Capabilities,
    CreateCloneRequest,
    CreateSnapshotRequest,
    GarbageCollection,
    RestoreRequest,
    SetRetentionRequest,
    Snapshot,
    SnapshotList,
)
from context_service.domain.cluster import (
    Cluster,
    ClusterError,
    context_claim_name,
    snapshot_object_name,
)
from context_service.domain.context import commands as cmd
from context_service.domain.context import events as ev
from context_service.domain.context import lifecycle as lc
from context_service.domain.context import snapshot_classes
from context_service.domain.context.events import CloneSource
from context_service.domain.context.state import ContextState
from context_service.domain.errors import (
    ContextExistsError,
    ContextNotFoundError,
    LifecycleUnsupportedError,
)
from context_service.domain.events import Subject
from context_service.domain.values import format_timestamp
from context_service.http import render
from context_service.http.common import CATALOG, caller, json, services, threaded, wait_for_views
from context_service.http.errors import HttpError
from context_service.http.ports import Services
from context_service.http.refusals import refusals
from context_service.http.sent import NOTHING, Sent, SentBody

PATH = "/v1/namespaces/{namespace:str}/contexts/{name:str}"
HIDDEN = "no such context, or the caller may not {} it"
UNSUPPORTED = "not supported by this storage backend"

# --- shapes -----------------------------------------------------------------------------------


def snapshot_json(state: ContextState, s: ev.SnapshotRecord) -> dict[str, Any]:
    """The Snapshot shape, keys in spec order."""
    out: dict[str, Any] = {"name": s.name, "contextName": state.name,
                           "namespace": state.namespace}
    if s.revision:
        out["revision"] = s.revision
    out["status"] = s.status
    out["snapshotName"] = s.object_name
    if s.snapshot_class:
        out["snapshotClass"] = s.snapshot_class
    out["sourceClaimName"] = context_claim_name(state.name)
    out["createdAt"] = format_timestamp(s.created_at)
    if s.protected:
        out["protected"] = True
    if s.labels:
        out["labels"] = dict(s.labels)
    if s.error:
        out["error"] = s.error
    return out


def _snapshots(state: ContextState, items: Iterable[ev.SnapshotRecord]) -> list[dict[str, Any]]:
    return [snapshot_json(state, s) for s in sorted(items, key=lambda s: (s.created_at, s.name))]


# --- helpers ----------------------------------------------------------------------------------


def _cluster(found: Services) -> Cluster:
    cluster = found.pools.cluster if found.pools is not None else None
    if cluster is None:
        raise HttpError(500, "internal_error", "Kubernetes is not configured (CS_KUBE is off)")
    return cluster


def _kube(call: Callable[[], Any]) -> Any:
    try:
        return call()
    except ClusterError as exc:
        raise HttpError(500, "internal_error", f"kubernetes: {exc}") from exc


def _visible(request: Request[Any, Any, Any], namespace: str, name: str, actor: Subject,
             permission: str) -> ContextState:
    """The catalog document of a context ``actor`` holds ``permission`` on, with every write
    recorded before this request began (read-your-writes). Decisions that depend on the state
    (class resolution, clone readiness, dry runs) use it; commands check again when they commit.
    """
    wait_for_views(request, CATALOG)
    entry = services(request).reads.get(namespace, name)
    if entry is None or permission not in entry.state.permissions_of(actor):
        raise ContextNotFoundError()
    return entry.state


class _SourceTurns:
    """Clones of a context and its GC runs take turns, per (namespace, context), in this
    process (``Services.source_turn`` adds the replicas' turn). A GC reads the clones it must
    keep snapshots for, then commits; a clone checks its snapshot on the log, then commits
    another stream. Interleaved, a clone committed between GC's read and GC's commit lost its
    snapshot to that GC (spec 6.6 step 4): taking turns, the clone commits first and GC, reading
    after it, keeps the snapshot, or GC commits first and the clone finds its snapshot gone
    (404). Striped: a collision only makes two wait."""

    def __init__(self, stripes: int = 64) -> None:
        self._locks = [threading.Lock() for _ in range(stripes)]

    def __call__(self, namespace: str, context: str) -> threading.Lock:
        return self._locks[hash((namespace, context)) % len(self._locks)]


_turns = _SourceTurns()
TURN_WAIT_FACTOR = 2  # read waits: a GC holds the turn while it waits for the views (one)


@contextmanager
def _turn(found: Services, namespace: str, context: str) -> Iterator[None]:
    """This process's turn first (its waiters hold no connection), then the replicas' one.
    This process's is waited for as long as a GC may hold it (the lock wait and the read wait
    of the replicas' turn), then ``503``: requests queued behind a turn without a bound held
    handler threads, and every context sharing its stripe with them."""
    held = _turns(namespace, context)
    if not held.acquire(timeout=TURN_WAIT_FACTOR * found.read_wait_seconds):
        raise HttpError(503, "unavailable", "another clone or garbage collection of this "
                        "context is under way; retry shortly")
    try:
        if found.source_turn is None:
            yield
            return
        with found.source_turn(namespace, context):
            yield
    finally:
        held.release()


def _clock(found: Services) -> Callable[[], datetime]:
    """The clock the write model decides with (so a dry run judges ages exactly like GC)."""
    clock: Callable[[], datetime] | None = getattr(found.contexts, "clock", None)
    return clock or (lambda: datetime.now(UTC))


# --- snapshots --------------------------------------------------------------------------------


@post(PATH + "/snapshots", status_code=201, dto=SentBody, opt={"permission": "write"},
      responses=refusals({404: HIDDEN.format("write"),
                          409: "the context has a snapshot of this name, or its VolumeSnapshot "
                               "object exists",
                          501: f"{UNSUPPORTED}: no VolumeSnapshot API or class for its driver"}))
@threaded
def create_snapshot(request: Request[Any, Any, Any], namespace: FromPath[str],
                    name: FromPath[str],
                    data: JSONBody[Sent[CreateSnapshotRequest]] = NOTHING) -> Response[Snapshot]:
    """Take a CSI VolumeSnapshot of the context's PVC (requires write)."""
    actor = caller(request)
    found = services(request)
    state = _visible(request, namespace, name, actor, "write")
    req = data.decode(refuse_nul=True)
    snapshot = req.name or ""
    lc.validate_snapshot_name(snapshot)
    cluster = _cluster(found)
    chosen = _kube(lambda: snapshot_classes.resolve(cluster, state, req.snapshot_class or ""))
    object_name = snapshot_object_name(name, snapshot)
    if _kube(lambda: cluster.get_snapshot(namespace, object_name)) is not None:
        raise ContextExistsError()
    command = cmd.RecordSnapshot(
        actor=actor, name=snapshot, storage_class=chosen.storage_class,
        snapshot_class=chosen.snapshot_class, protected=bool(req.protected),
        labels=dict(req.labels or {}))
    outcome = found.contexts.execute(namespace, name, command)
    recorded = lc.find_snapshot(outcome.state, snapshot)
    return json(snapshot_json(outcome.state, recorded), 201, outcome.position)


@get(PATH + "/snapshots", opt={"permission": "read"},
     responses=refusals({404: HIDDEN.format("read")}))
@threaded
def list_snapshots(request: Request[Any, Any, Any], namespace: FromPath[str],
                   name: FromPath[str]) -> Response[SnapshotList]:
    """List the context's snapshots by creation time (requires read)."""
    state = _visible(request, namespace, name, caller(request), "read")
    return json({"items": _snapshots(state, state.snapshots)})


@get(PATH + "/snapshots/{snapshot:str}", opt={"permission": "read"},
     responses=refusals({404: "no such context or snapshot, or the caller may not read it"}))
@threaded
def get_snapshot(request: Request[Any, Any, Any], namespace: FromPath[str], name: FromPath[str],
                 snapshot: FromPath[str]) -> Response[Snapshot]:
    """Read one snapshot with its observed status (requires read)."""
    state = _visible(request, namespace, name, caller(request), "read")
    return json(snapshot_json(state, lc.find_snapshot(state, snapshot)))


# --- clones and restore -----------------------------------------------------------------------


@post(PATH + "/clones", status_code=201, dto=SentBody, opt={"permission": "derive"},
      responses=refusals({404: "no such context or snapshot, or the caller may not derive "
                               "from it",
                          409: "the new context's name is taken"}))
@threaded
def create_clone(request: Request[Any, Any, Any], namespace: FromPath[str], name: FromPath[str],
                 data: JSONBody[Sent[CreateCloneRequest]] = NOTHING,
                 ) -> Response[ContextResource]:
    """Clone a ready snapshot into a new context owned by the caller (requires derive)."""
    actor = caller(request)
    found = services(request)
    state = _visible(request, namespace, name, actor, "derive")
    req = data.decode(refuse_nul=True)
    target, snapshot = req.name or "", req.snapshot or ""
    lc.validate_clone(target, snapshot)
    source = lc.clone_source(state, snapshot)
    guard = found.name_guard
    if guard is not None:
        _kube(lambda: guard(namespace, target))
    command = cmd.CreateClone(actor=actor, name=target, namespace=namespace, source=name,
                             snapshot=source)
    with _turn(found, namespace, name):  # checks the snapshot on the log and commits, GC waiting
        outcome = found.contexts.execute(namespace, target, command)
    return json(render.context(outcome.state), 201, outcome.position)


# The PVC backend always refuses (501); the success documented is a backend's that restores.
@post(PATH + "/restore", status_code=200, dto=SentBody, opt={"permission": "write"},
      responses=refusals({404: HIDDEN.format("write"), 501: UNSUPPORTED}))
@threaded
def restore(request: Request[Any, Any, Any], namespace: FromPath[str], name: FromPath[str],
            data: JSONBody[Sent[RestoreRequest]] = NOTHING) -> Response[ContextResource]:
    """Restore in place: not supported by the PVC backend (requires write)."""
    _visible(request, namespace, name, caller(request), "write")
    req = data.decode(refuse_nul=True)
    lc.validate_snapshot_name(req.snapshot or "")
    raise LifecycleUnsupportedError(lc.RESTORE_DETAIL)


# --- retention and GC -------------------------------------------------------------------------


@put(PATH + "/retention", dto=SentBody, opt={"permission": "administer"},
     responses=refusals({404: HIDDEN.format("administer")}))
@threaded
def set_retention(request: Request[Any, Any, Any], namespace: FromPath[str],
                  name: FromPath[str], data: JSONBody[Sent[SetRetentionRequest]] = NOTHING,
                  ) -> Response[ContextResource]:
    """Replace the snapshot retention policy (requires administer)."""
    actor = caller(request)
    found = services(request)
    found.contexts.authorize(namespace, name, actor, "administer")
    req = data.decode(refuse_nul=True)
    command = cmd.SetRetention(actor=actor, keep_last=req.keep_last or 0,
                              max_age=req.max_age or "")
    outcome = found.contexts.execute(namespace, name, command)
    return json(render.context(outcome.state), 200, outcome.position)


@post(PATH + "/gc", status_code=200, opt={"query": ("dryRun",), "permission": "administer"},
      responses=refusals({404: HIDDEN.format("administer")}))
@threaded
def collect_garbage(request: Request[Any, Any, Any], namespace: FromPath[str],
                    name: FromPath[str]) -> Response[GarbageCollection]:
    """Apply the retention policy to the context's snapshots (requires administer)."""
    actor = caller(request)
    found = services(request)
    state = _visible(request, namespace, name, actor, "administer")
    dry_run = request.query_params.get("dryRun") == "true"
    if dry_run:
        plan = lc.collection_plan(state, _clones_of(found, namespace, name), _clock(found)())
        return json(_gc_json(state, True, plan.deleted, plan.kept))
    with _turn(found, namespace, name):  # no clone of this context commits until GC has
        wait_for_views(request, CATALOG)  # every clone committed before the turn: read
        command = cmd.CollectSnapshots(actor=actor, dry_run=False,
                                       clones=_clones_of(found, namespace, name))
        outcome = found.contexts.execute(namespace, name, command)
    after = outcome.state
    return json(_gc_json(after, False, after.last_collection, after.snapshots), 200,
                outcome.position)


def _clones_of(found: Services, namespace: str, name: str) -> tuple[CloneSource, ...]:
    """Clone provenance of the namespace's live contexts cloned from ``name``: the catalog's
    clones of this context only, never every context document of the namespace."""
    return tuple(found.reads.clones_of(namespace, name))


def _gc_json(state: ContextState, dry_run: bool, deleted: Iterable[ev.SnapshotRecord],
             kept: Iterable[ev.SnapshotRecord]) -> dict[str, Any]:
    out: dict[str, Any] = {"dryRun": dry_run}
    for key, items in (("deleted", _snapshots(state, deleted)), ("kept", _snapshots(state, kept))):
        if items:
            out[key] = items
    return out


# --- capabilities -----------------------------------------------------------------------------


@get(PATH + "/capabilities", opt={"permission": "read"},
     responses=refusals({404: HIDDEN.format("read")}))
@threaded
def capabilities(request: Request[Any, Any, Any], namespace: FromPath[str],
                 name: FromPath[str]) -> Response[Capabilities]:
    """What the storage backend can do for this context, and why not (requires read)."""
    actor = caller(request)
    found = services(request)
    state = _visible(request, namespace, name, actor, "read")
    cluster = _cluster(found)
    caps = _kube(lambda: snapshot_classes.capabilities(cluster, state))
    out: dict[str, Any] = {"snapshots": caps.snapshots, "clones": caps.clones,
                           "restore": caps.restore}
    for key, value in (("driver", caps.driver), ("snapshotClass", caps.snapshot_class),
                       ("reason", caps.reason)):
        if value:
            out[key] = value
    return json(out)


ROUTES = [create_snapshot, list_snapshots, get_snapshot, create_clone, restore, set_retention,
          collect_garbage, capabilities]

"""The steps a pack request shares with its stream (agent-context-api.md §7.2 steps 7-13):
context set, position and times, named collections, retrieval and packing under the deadline,
the release check, completeness, and recording the release.

Blocking: the routes run it on the handlers' thread pool.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import msgspec
from litestar import Request

from context_service.contract.agent import PackRequest as PackBody
from context_service.domain.context_pack.commands import ReleasePack
from context_service.domain.context_pack.events import (
    ContextPackReleased,
    ItemSource,
    MissingEntry,
    PackParameters,
    ReleasedItem,
)
from context_service.domain.context_pack.readable import (
    BoundToOtherSetError,
    Readable,
    active_set,
    named_readable,
    readable_collections,
)
from context_service.domain.context_set.state import ContextSetState
from context_service.domain.echoed import quoted
from context_service.domain.errors import ContextSetNotFoundError
from context_service.domain.pack.engine import assemble
from context_service.domain.pack.items import Item, Missing, Pack
from context_service.domain.pack.model import (
    ENGINE_VERSION,
    Corpus,
    NamespaceAt,
    Retrieval,
    Scored,
)
from context_service.domain.pack.render import missing_json, pack_digest, pack_id, replay_id
from context_service.domain.pack.request import (
    AsOf,
    PackRequest,
    canonical_request,
    ordered_sources,
    task_sha256,
)
from context_service.domain.pack.scope import PACKABLE_TYPES, PackScope, pack_scope
from context_service.http.agent import packs_shapes as shapes
from context_service.http.agent.body import decode
from context_service.http.agent.errors import ApiError
from context_service.http.agent.late_body import PendingBody
from context_service.http.agent.pack_services import PackServices, loaded_corpus, pack_services
from context_service.http.agent.pipeline import (
    ACCESS_VIEWS,
    AgentCaller,
    agent_services,
    authenticate,
    recheck,
)
from context_service.http.common import services, wait_for_views

SCOPE = "context:read"
VIEWS = ("context_catalog", "context_sets", "context_pack_replays")


class Timings:
    """Milliseconds spent waiting for views, retrieving and packing (``Server-Timing``)."""

    def __init__(self) -> None:
        self.started = time.monotonic()
        self.wait = 0.0
        self.retrieve = 0.0
        self.pack = 0.0

    def header(self) -> str:
        total = (time.monotonic() - self.started) * 1000
        return (f"wait;dur={self.wait:.1f}, retrieve;dur={self.retrieve:.1f}, "
                f"pack;dur={self.pack:.1f}, total;dur={total:.1f}")


class TimedRetrieval:
    """The retrieval port for one pack, with the time spent in it added to
    ``timings.retrieve``, and each list computed once: a set may repeat a requirement's query
    (twenty requirements of one query would otherwise cost twenty lists), and in lexical mode a
    requirement equal to the task asks for the task's list. The lists are deterministic, so a
    repeat is the same answer."""

    def __init__(self, inner: Retrieval, timings: Timings) -> None:
        self.inner = inner
        self.timings = timings
        self.lists: dict[tuple[object, ...], list[Scored]] = {}

    def _once(self, key: tuple[object, ...], compute: Callable[[], list[Scored]]) -> list[Scored]:
        found = self.lists.get(key)
        if found is None:
            started = time.monotonic()
            try:
                found = self.lists[key] = compute()
            finally:
                self.timings.retrieve += (time.monotonic() - started) * 1000
        return list(found)  # the caller's own copy

    def lexical(self, query: str, corpus: Corpus,
                eligible: frozenset[str] | None) -> list[Scored]:
        return self._once(("lexical", query, id(corpus), eligible),
                          lambda: self.inner.lexical(query, corpus, eligible))

    def vector(self, query: str, corpus: Corpus,
               eligible: frozenset[str] | None) -> list[Scored]:
        return self._once(("vector", query, id(corpus), eligible),
                          lambda: self.inner.vector(query, corpus, eligible))

    def hybrid(self, query: str, corpus: Corpus, eligible: frozenset[str] | None,
               requirement: bool) -> list[Scored]:
        return self._once(("hybrid", query, id(corpus), eligible, requirement),
                          lambda: self.inner.hybrid(query, corpus, eligible, requirement))


@dataclass(frozen=True, slots=True)
class Released:
    """A pack as released: the pack, its ids, its recorded expiry and release position."""

    pack: Pack
    replay_id: str
    expires_at: datetime
    position: int
    timings: Timings


class Access:
    """The caller's access now (§3.4 rules 1-3), read from the views when asked."""

    def __init__(self, request: Request[Any, Any, Any], caller: AgentCaller) -> None:
        self.request = request
        self.caller = caller

    def sets(self) -> Callable[[str], ContextSetState | None]:
        found = services(self.request).context_sets
        assert found is not None, "context sets are not configured"
        reads, workspace = found.reads, self.caller.workspace
        return lambda set_id: reads.get(workspace, set_id)

    def readable(self) -> Readable:
        """The collections readable now (one read of the catalog)."""
        creator, bound = self.caller.creator, self.caller.context_set_id
        listed = agent_services(self.request).catalog.listed(self.caller.workspace)
        bound_set = self.sets()(bound) if bound else None
        return readable_collections(creator, listed.states, bound, bound_set, listed.refused)


def chosen_set(access: Access, named: str | None) -> ContextSetState | None:
    """§7.2 step 7: the active set, or the 403/404 of §3.5."""
    try:
        return active_set(access.caller.context_set_id, named, access.sets())
    except BoundToOtherSetError as exc:
        raise ApiError(403, "FORBIDDEN", exc.message) from exc
    except ContextSetNotFoundError as exc:
        raise ApiError(404, "NOT_FOUND", "context set not found") from exc


def collection_not_found(name: str) -> ApiError:
    return ApiError(404, "NOT_FOUND", f"collection {quoted(name)} not found")  # cut: 0059


RELEASE_VIEWS = ("context_catalog", "context_sets", *ACCESS_VIEWS)


class ReleaseAccess:
    """The caller's access at the release check (§7.9), read once when the engine first asks,
    after waiting for the catalog, the sets and the access views to reach the log head then:
    the route's own recheck of the credential (§1.5 steps 2-4) needs no second wait."""

    def __init__(self, access: Access) -> None:
        self.access = access
        self.read: Readable | None = None

    def readable(self, name: str) -> bool:
        if self.read is None:
            wait_for_views(self.access.request, RELEASE_VIEWS)
            self.read = self.access.readable()
        return name in self.read

    def settle(self) -> None:
        """Wait for the access views now, unless the engine already asked (a pack with no
        items never does)."""
        if self.read is None:
            wait_for_views(self.access.request, ACCESS_VIEWS)


def readable_at(access: Access, ns: NamespaceAt, now: Readable,
                at_head: bool = False) -> Callable[[str], bool]:
    """Whether a collection is read at ``ns.position`` by the caller (access ``now``): rule 5
    is judged for the generation that lived at P, as a pack there judged it (a replay's
    ``verify`` too): the administrator reads collections deleted since, and anyone reads a
    name a member took again since by its name. At the log's head (``at_head``: no
    ``systemTime``) that is what is admitted now, held in memory; before it, the view is
    asked (a database round trip: 5 ms of a 12 ms pack)."""
    admitted = now.admitted_now() if at_head else \
        agent_services(access.request).admission.admitted_at(access.caller.workspace,
                                                             ns.position)
    return named_readable(now, lambda name: (
        (c := ns.collections.get(name)) is not None and c.type in PACKABLE_TYPES), admitted)


def build_pack(packs: PackServices, access: Access, request: PackRequest,
               active: ContextSetState | None, as_of: AsOf, timings: Timings,
               deadline: float, at_release: ReleaseAccess,
               scope_of: Callable[..., PackScope] = pack_scope,
               at_head: bool = False) -> tuple[Pack, int]:
    """Steps 9-11 at ``as_of``: scope and named collections (``scope_of``: a recompute's is
    ``recompute_scope``), retrieval and packing under the deadline (a monotonic instant), the
    release check against access read again at the end (``at_release``). Returns the pack and
    the active set's version in force at P."""
    started = time.monotonic()
    ports = packs.configured()
    ns = ports.inputs.namespace_at(access.caller.workspace, as_of.position)
    scope = scope_of(ns, request, active, readable_at(access, ns, access.readable(), at_head))
    if scope.not_found:
        raise collection_not_found(scope.not_found)
    corpus = loaded_corpus(access.request, ports, scope.usable)
    timings.retrieve += (time.monotonic() - started) * 1000
    before = timings.retrieve
    packing = time.monotonic()
    pack = assemble(request, as_of, scope, corpus, TimedRetrieval(ports.retrieval, timings),
                    ports.count_tokens, at_release.readable,
                    lambda: time.monotonic() >= deadline)
    timings.pack += (time.monotonic() - packing) * 1000 - (timings.retrieve - before)
    return pack, scope.set_version


def release_event(caller: AgentCaller, request: PackRequest, pack: Pack, rid: str,
                  set_version: int, at: datetime) -> ContextPackReleased:
    """The ``ContextPackReleased`` of a pack: hashes and identities only (§7.13, §12.2)."""
    return ContextPackReleased(
        at=at, actor=caller.creator.key, replay_id=rid,
        pack_id=pack_id(pack_digest(pack)), credential_id=caller.credential.id,
        created_by=caller.creator.key, task_sha256=task_sha256(request.task),
        parameters=PackParameters(
            max_tokens=request.max_tokens, max_latency_ms=request.max_latency_ms,
            coverage=request.coverage, collection_ids=tuple(sorted(set(request.collection_ids))),
            document_ids=tuple(sorted(set(request.document_ids))),
            sources=tuple(ordered_sources(request.sources)), retrieval=request.retrieval,
            context_set_id=request.context_set_id,
            context_set_version=set_version if request.context_set_id else 0),
        valid_time=pack.as_of.valid_time, system_time=pack.as_of.system_time,
        position=pack.as_of.position, engine_version=ENGINE_VERSION,
        items=tuple(_released_item(i) for i in pack.items), merkle_root=pack.merkle_root,
        complete=pack.complete, missing=tuple(_missing_entry(m) for m in pack.missing),
        used_tokens=pack.used_tokens, expires_at=at)


def _released_item(item: Item) -> ReleasedItem:
    s = item.source
    return ReleasedItem(id=item.id, class_=item.cls, hash=item.hash, source=ItemSource(
        kind=s.kind, collection_id=s.collection_id, document_id=s.document_id,
        record_id=s.record_id, revision=s.revision, context_set_id=s.context_set_id,
        context_set_version=s.context_set_version))


def _missing_entry(m: Missing) -> MissingEntry:
    return MissingEntry(kind=m.kind, id=m.id, collection_id=m.collection_id,
                        document_id=m.document_id, reason=m.reason)


def release(request: Request[Any, Any, Any], raw: bytes | PendingBody) -> Released:
    """Every check of §7.2 and the recording of §7.13; raises the first failure as an
    ``ApiError`` (or the pipeline's)."""
    timings = Timings()
    packs = pack_services(request)
    agent = agent_services(request)
    started_at = agent.clock()
    head = packs.head()
    caller = authenticate(request, SCOPE, (*VIEWS, *packs.wait_views()), head)
    timings.wait = (time.monotonic() - timings.started) * 1000
    checked = shapes.check_pack(decode(raw, PackBody), started_at)
    access = Access(request, caller)
    active = chosen_set(access, checked.named_set)
    pack_request = msgspec.structs.replace(
        checked.request, context_set_id=active.id if active is not None else "")
    position, system_time = packs.configured().inputs.resolve(caller.workspace, head,
                                                              checked.system_time)
    valid_time = checked.valid_time or shapes.valid_time_default(started_at)
    as_of = AsOf(valid_time=valid_time, system_time=system_time, position=position)
    deadline = timings.started + pack_request.max_latency_ms / 1000
    at_release = ReleaseAccess(access)
    pack, set_version = build_pack(packs, access, pack_request, active, as_of, timings,
                                   deadline, at_release, at_head=checked.system_time is None)
    at_release.settle()  # a revocation during retrieval is seen here
    recheck(request, caller, SCOPE)
    if pack.refused:
        raise ApiError(422, "AGENT_PACK_INCOMPLETE", "the pack is incomplete",
                       {"missing": [missing_json(m) for m in pack.missing]})
    canonical = canonical_request(pack_request, as_of, set_version)
    rid = replay_id(caller.credential.id, canonical, pack_digest(pack))
    event = release_event(caller, pack_request, pack, rid, set_version, agent.clock())
    outcome = packs.commands.execute(caller.workspace, rid,
                                     ReleasePack(release=event, retention=packs.retention))
    recorded = outcome.state.release
    assert recorded is not None
    return Released(pack, rid, recorded.expires_at,
                    outcome.position or _release_position(request, packs, caller, rid),
                    timings)


def _release_position(request: Request[Any, Any, Any], packs: PackServices,
                      caller: AgentCaller, rid: str) -> int:
    """Where an already recorded release of ``rid`` sits in the log (from the replay view,
    waited for when the release was recorded only just now, by another request)."""
    found = packs.replays.get(caller.workspace, rid)
    if found is None:
        wait_for_views(request, ("context_pack_replays",))
        found = packs.replays.get(caller.workspace, rid)
    return found.position if found is not None else 0

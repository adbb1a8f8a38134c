"""The adoption import: read labelled objects through the cluster port and record each one the
log does not know yet, once, as events (spec 6.10). Appending at version 0 makes it idempotent:
a stream that already exists (even a deleted context's) is skipped."""

from __future__ import annotations

import functools
import logging
from dataclasses import dataclass, field
from datetime import UTC, datetime

import msgspec
from eventsourcing.persistence import IntegrityError

from context_service.adapters.eventstore.store import EventStore
from context_service.domain.cluster import NAME_LABEL, Cluster, ClusterError, SnapshotInfo
from context_service.domain.context.adoption import adopt_claim, is_context_claim
from context_service.domain.context.events import QueryRecord, RecordField, SourceRef
from context_service.domain.context.index_upload import body_events
from context_service.domain.errors import ContextInvalidError, EventTooLargeError
from context_service.domain.events import Event
from context_service.domain.pool.adoption import group_pools
from context_service.domain.stream import StreamRef, context_stream

log = logging.getLogger(__name__)
ACTOR = "service:context-service"


@dataclass
class AdoptionReport:
    contexts: list[str] = field(default_factory=list)
    pools: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    not_imported: list[str] = field(default_factory=list)


def _record(store: EventStore, stream: StreamRef, *events: Event) -> bool:
    if store.load(stream):
        return False
    try:
        store.append(stream, 0, list(events))
    except IntegrityError:
        return False
    return True


def _unrecordable(events: list[Event]) -> str:
    """Why the log could not hold an object's events ("" when it can): an annotation holding
    U+0000 would hold every view at its event (PostgreSQL text cannot store it), and one event
    above the size limit is refused. One such object is reported, never the whole import
    failed (it runs at every start)."""
    if any(b"\\u0000" in msgspec.json.encode(event) for event in events):
        return "an annotation or mirrored record holds U+0000"
    return ""


class _MirroredRecord(msgspec.Struct, rename="camel"):
    """A record document of the mirror (api 1.7, agent api 5.1: camelCase, empty omitted)."""

    id: str
    context: str
    type: str
    revision: str
    text: str
    title: str = ""
    keywords: tuple[str, ...] = ()
    source: SourceRef = SourceRef("", "", "")
    file: str = ""
    valid_from: datetime | None = None
    valid_to: datetime | None = None
    supersedes: tuple[str, ...] = ()
    fact_key: str = ""
    fields: tuple[RecordField, ...] = ()

    def record(self) -> QueryRecord:
        return QueryRecord(
            id=self.id, context=self.context, type=self.type, revision=self.revision,
            text=self.text, title=self.title or "", keywords=self.keywords or (),
            source=self.source, file=self.file or "", valid_from=self.valid_from,
            valid_to=self.valid_to, supersedes=self.supersedes or (),
            fact_key=self.fact_key or "", fields=self.fields or ())


class _MirroredIndex(msgspec.Struct):
    revision: str
    records: list[_MirroredRecord] = []


def _mirrored_index(cluster: Cluster, namespace: str, name: str,
                    now: datetime) -> list[Event]:
    """The query-index ConfigMap mirror (spec 6.5), imported as the published index (in parts
    when its records would not fit one event)."""
    raw = cluster.get_query_mirror(namespace, name)
    if raw is None:
        return []
    index = msgspec.json.decode(raw, type=_MirroredIndex)
    return body_events(now, ACTOR, index.revision, tuple(r.record() for r in index.records))


def _snapshots(cluster: Cluster, namespace: str, context: str) -> list[SnapshotInfo]:
    try:
        return cluster.list_snapshots(namespace, context)
    except ClusterError as exc:
        if exc.api_not_installed or exc.not_found:
            return []
        raise


def adopt(cluster: Cluster, store: EventStore, pool_namespace: str,
          now: datetime | None = None) -> AdoptionReport:
    now = now or datetime.now(UTC)
    report = AdoptionReport()
    for claim in cluster.list_context_claims(None):
        if not is_context_claim(claim):
            continue
        name = claim.labels[NAME_LABEL]
        label = f"{claim.namespace}/{name}"
        snapshots = _snapshots(cluster, claim.namespace, name)
        try:
            event = adopt_claim(claim, snapshots, now, ACTOR)
            index = _mirrored_index(cluster, claim.namespace, name, now)
        except (msgspec.DecodeError, msgspec.ValidationError, KeyError, IndexError,
                ContextInvalidError) as exc:
            report.not_imported.append(f"{label}: unreadable annotation or mirror: {exc}")
            continue
        skipped = len(snapshots) - len(event.snapshots)
        if skipped:
            report.not_imported.append(f"{label}: {skipped} VolumeSnapshot(s) without the "
                                       "type, size or access-mode annotation")
        events: list[Event] = [event, *index]
        if (why := _unrecordable(events)):
            report.not_imported.append(f"{label}: {why}")
            continue
        try:
            recorded = _record(store, context_stream(claim.namespace, event.name), *events)
        except EventTooLargeError as exc:
            report.not_imported.append(f"{label}: {exc}")
            continue
        (report.contexts if recorded else report.skipped).append(label)
    objects = cluster.list_pool_objects(pool_namespace, None)
    claim_of = functools.partial(cluster.get_claim, pool_namespace)
    for found in group_pools(objects, pool_namespace, now, ACTOR, claim_of):
        if found.event is None:
            report.not_imported.append(f"pool {found.name}: {found.reason}")
        elif (why := _unrecordable([found.event])):
            report.not_imported.append(f"pool {found.name}: {why}")
        elif _record(store, StreamRef("pool", "", found.name), found.event):
            report.pools.append(found.name)
        else:
            report.skipped.append(f"pool {found.name}")
    log.info("adoption finished", extra={"contexts": len(report.contexts),
                                         "pools": len(report.pools),
                                         "skipped": len(report.skipped),
                                         "not_imported": report.not_imported})
    return report

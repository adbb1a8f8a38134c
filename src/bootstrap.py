"""The one composition root: builds the database, event store, projections, workers and app.

Nothing else wires concrete adapters together.
"""

from __future__ import annotations

import functools
import gc
import importlib
import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from eventsourcing.postgres import PostgresDatastore, PostgresTrackingRecorder
from threadpoolctl import threadpool_limits

from context_service.adapters.embedding.feature_process import FeatureProcess
from context_service.adapters.embedding.wordllama_model import TextFeaturesModel, load
from context_service.adapters.embedding.wordllama_model import gauges as word_id_gauges
from context_service.adapters.eventstore.access import CredentialApplication, WorkspaceApplication
from context_service.adapters.eventstore.application import (
    ContextApplication,
    PoolApplication,
    utc_now,
)
from context_service.adapters.eventstore.consistency import LogConsistency
from context_service.adapters.eventstore.context_packs import ContextPackApplication
from context_service.adapters.eventstore.context_sets import ContextSetApplication
from context_service.adapters.eventstore.query_templates import QueryTemplateApplication
from context_service.adapters.eventstore.runner import Listener, ProjectionRunner
from context_service.adapters.eventstore.store import EventStore
from context_service.adapters.eventstore.timeline import Timeline
from context_service.adapters.optional import NotInstalledError
from context_service.adapters.pack.corpus import CorpusLoader
from context_service.adapters.pack.inputs_cache import FoldCache
from context_service.adapters.pack.retrieval import FastRetrieval
from context_service.adapters.pack.vector_matrix import VectorMatrices
from context_service.adapters.pack.warmer import CorpusWarmer
from context_service.adapters.postgres import embedded
from context_service.adapters.postgres.database import open_datastore
from context_service.adapters.postgres.lock import LeaderWorker
from context_service.adapters.postgres.migrations import migrate, schema_problem
from context_service.adapters.postgres.sandbox.session import TemplateSandbox
from context_service.adapters.postgres.sandbox.setup import open_sandbox, prepare_role
from context_service.adapters.postgres.turns import AdvisoryTurns
from context_service.adapters.postgres.views.agent_access import (
    AccessReadsSql,
    CredentialsSql,
    MembersSql,
    credential_key,
)
from context_service.adapters.postgres.views.collection_admission import (
    AdmittedContextsSql,
    CollectionAdmissionSql,
)
from context_service.adapters.postgres.views.context_pack_replays import (
    ReplayReadsSql,
    ReplaySql,
)
from context_service.adapters.postgres.views.context_sets import (
    ContextSetReadsSql,
    ContextSetSql,
)
from context_service.adapters.postgres.views.contexts import (
    AuditSql,
    CatalogSql,
    ContextReadsSql,
    RevisionSql,
)
from context_service.adapters.postgres.views.credential_ids import credential_ids
from context_service.adapters.postgres.views.features import AgentDataSql, PassageFeaturesSql
from context_service.adapters.postgres.views.fields_plans import FieldReadsSql
from context_service.adapters.postgres.views.pack_inputs import PackInputReadsSql, PackInputsSql
from context_service.adapters.postgres.views.pools import PoolReadsSql, PoolSql
from context_service.adapters.postgres.views.query_index import QueryIndexReadsSql, QueryIndexSql
from context_service.adapters.postgres.views.query_templates import (
    QueryTemplateReadsSql,
    QueryTemplateSql,
)
from context_service.adapters.postgres.views.snapshots import (
    SnapshotObjectsReadsSql,
    SnapshotObjectsSql,
)
from context_service.adapters.postgres.views.studied_fields import StudiedFieldsSql
from context_service.adapters.postgres.views.workspaces import WorkspacesSql
from context_service.config import Settings
from context_service.domain.bounded import MiB
from context_service.domain.cluster import Cluster
from context_service.domain.pool.state import PoolState
from context_service.domain.reconcile.guard import ClaimNameGuard
from context_service.http.agent.pack_services import PackServices
from context_service.http.agent.ratelimit import AuthFailures, RateLimiter
from context_service.http.common import views_caught_up
from context_service.http.ports import (
    AgentServices,
    ContextSetServices,
    PoolServices,
    QueryTemplateServices,
    Services,
)
from context_service.http.settings import SettingsUi
from context_service.projections.agent_access.directory import AccessDirectory
from context_service.projections.agent_access.projection import AgentCredentials, WorkspaceMembers
from context_service.projections.agent_data.projection import AgentData
from context_service.projections.audit_log.projection import AuditLog
from context_service.projections.base import Projection
from context_service.projections.collection_admission.projection import CollectionAdmission
from context_service.projections.context_catalog.listing import CatalogListing
from context_service.projections.context_catalog.projection import ContextCatalog
from context_service.projections.context_pack_replays.projection import ContextPackReplays
from context_service.projections.context_sets.projection import ContextSets
from context_service.projections.pack_inputs.projection import PackInputs
from context_service.projections.pack_inputs.reads import PackPorts
from context_service.projections.passage_features.projection import PassageFeatures
from context_service.projections.pool_status.projection import PoolStatus
from context_service.projections.query_index.projection import QueryIndex
from context_service.projections.query_templates.projection import QueryTemplates
from context_service.projections.revision_history.projection import RevisionHistory
from context_service.projections.snapshots.projection import SnapshotObjects
from context_service.projections.studied_fields.projection import StudiedFields

if TYPE_CHECKING:
    from litestar import Litestar

log = logging.getLogger(__name__)
TRACKING_TABLE = "projection_tracking"
# Embedded servers stop after every worker, dependents first; PostgreSQL goes last.
SERVER_ORDER = ("kubernetes", "nats", "postgres")
GC_THRESHOLD = 20_000  # the serving process's first-generation threshold (pack_ports)
# Views fed by whole query indexes: their runners read fewer events at once.
INDEX_VIEWS = ("query_index", "passage_features", "agent_data", "studied_fields")
# The worker (a ``CS_WORKERS`` name, one advisory lock) running each runner: the query index and
# the features of its texts advance separately, so a new index is searchable before its
# embeddings are computed.
RUNNER_WORKER = {"projections": "projections", "query-index": "query-index",
                 "query-features": "query-index"}
# The development control plane (CS_KUBE=local, ``make run``): the one door from the service to
# ``context_service.devcluster``, opened by name in the local mode only. A wheel does not ship it.
LOCAL_CONTROL_PLANE = "context_service.devcluster.local"


def database_url(settings: Settings) -> str:
    if settings.database_url:
        return settings.database_url
    return embedded.start(settings.data_dir)


def _step(step: str, action: Callable[[], object], quiet: bool = False, **extra: object) -> None:
    """Run one shutdown step and log one line for it (``quiet``: the step logs its own); a
    failing step does not stop the next."""
    started = time.monotonic()
    try:
        action()
    except Exception:
        log.exception(f"shutdown: {step} failed", extra={"step": step, **extra})
        return
    if not quiet:
        log.info(f"shutdown: {step}", extra={
        "step": step, "seconds": round(time.monotonic() - started, 3), **extra})


def projection_workers() -> dict[str, list[tuple[Projection, Callable[[Any], Any]]]]:
    """Every projection with the factory of its SQL view, grouped by the runner that applies
    it (``RUNNER_WORKER`` names the worker running each).

    A runner applies one read of the log to all its projections in one transaction, with its
    own tracking positions and thread. The embedding model loads on the first text it is given.
    """
    features = TextFeaturesModel()
    # a publication's features are computed in a child process, out of this one's lock
    passage_features = PassageFeatures(FeatureProcess(features))
    return {
        "projections": [
            (ContextCatalog(), CatalogSql),
            (RevisionHistory(), RevisionSql),
            (AuditLog(), AuditSql),
            (PoolStatus(), PoolSql),
            (SnapshotObjects(), SnapshotObjectsSql),
            (WorkspaceMembers(), MembersSql),
            (AgentCredentials(), CredentialsSql),
            (ContextSets(), ContextSetSql),
            (CollectionAdmission(), CollectionAdmissionSql),
            (QueryTemplates(), QueryTemplateSql),
            (PackInputs(), PackInputsSql),
            (ContextPackReplays(), ReplaySql),
        ],
        # studied fields need only the records, so they advance with the query index
        "query-index": [(QueryIndex(), QueryIndexSql), (StudiedFields(), StudiedFieldsSql)],
        # features before agent_data: in one transaction, agent_data takes over what they computed
        "query-features": [(passage_features, PassageFeaturesSql),
                           (AgentData(features, passage_features.handover), AgentDataSql)],
    }


@dataclass
class Container:
    settings: Settings
    url: str
    datastore: PostgresDatastore
    store: EventStore
    tracking: PostgresTrackingRecorder
    contexts: ContextApplication
    pools: PoolApplication
    workspaces: WorkspaceApplication
    credentials: CredentialApplication
    access: AccessDirectory
    context_sets: ContextSetApplication
    context_packs: ContextPackApplication
    query_templates: QueryTemplateApplication
    sandbox: TemplateSandbox
    # the live contexts of each namespace, fed by the projections runner like ``access``
    catalog: CatalogListing
    runners: dict[str, ProjectionRunner] = field(default_factory=dict)
    started: list[Any] = field(default_factory=list)
    # scrape-time gauges of parts that are not workers (the pack caches)
    gauge_sources: list[Callable[[], list[tuple[str, str, dict[str, str], float]]]] = field(
        default_factory=list)
    cluster: Cluster | None = None
    closers: list[Callable[[], None]] = field(default_factory=list)
    # stop functions of the embedded servers this process started, by SERVER_ORDER name
    servers: dict[str, Callable[[], None]] = field(default_factory=dict)

    def runner(self, view: str) -> ProjectionRunner:
        """The worker's runner that maintains ``view``."""
        for runner in self.runners.values():
            if view in runner.names:
                return runner
        raise KeyError(view)

    def runner_for(self, views: list[str]) -> ProjectionRunner:
        """A fresh runner over just these views (rebuilding one view leaves the others)."""
        chosen = [(p, v) for group in projection_workers().values() for p, v in group
                  if p.name in views]
        batch = 100 if set(INDEX_VIEWS) & set(views) else 2000
        return ProjectionRunner(self.store, self.tracking, chosen, batch_size=batch)

    @property
    def view_names(self) -> list[str]:
        return [name for runner in self.runners.values() for name in runner.names]

    def view_runners(self) -> dict[str, ProjectionRunner]:
        """Each view's runner in this process (waited on directly while it runs)."""
        return {v: r for r in self.runners.values() for v in r.names}

    def gauges(self) -> list[tuple[str, str, dict[str, str], float]]:
        """Scrape-time gauges: log head, each view's position and lag, worker counters."""
        head = self.store.head()
        groups = self.store.groups()
        out: list[tuple[str, str, dict[str, str], float]] = [
            ("cs_log_head_position", "Position of the newest stored event.", {}, head),
            ("cs_group_commit_transactions", "Append transactions this process committed.",
             {}, sum(g.batches for g in groups)),
            ("cs_group_commit_appends", "Appends (one per write) those transactions carried.",
             {}, sum(g.requests for g in groups)),
            ("cs_group_commit_seconds", "Time spent in append transactions.", {},
             round(sum(g.seconds for g in groups), 6))]
        for view in self.view_names:
            position = self.tracking.max_tracking_id(view) or 0
            out.append(("cs_projection_position", "Last log position applied to the view.",
                        {"projection": view}, position))
            out.append(("cs_projection_lag", "Events the view is behind the log head.",
                        {"projection": view}, head - position))
        for worker in self.started:
            out.extend(getattr(worker, "gauges", list)())
        for source in self.gauge_sources:
            out.extend(source())
        return out

    def start_workers(self, names: tuple[str, ...] | None = None) -> None:
        """Start the named workers (default: ``CS_WORKERS``), each active only while it holds
        its advisory lock (the reconciler keeps its own); those needing Kubernetes start only
        when a cluster is connected."""
        names = self.settings.workers if names is None else names
        self.store.start_listener()
        for worker in dict.fromkeys(RUNNER_WORKER.values()):
            runners = [r for n, r in self.runners.items() if RUNNER_WORKER[n] == worker]
            if worker in names and runners:
                self._lead(worker, functools.partial(_started_runners, runners))
        if self.cluster is not None and "reconciler" in names:
            from context_service.adapters.kubernetes.reconciler import reconciler_for

            self.started.append(reconciler_for(self).start())
        if self.cluster is not None and "snapshots" in names:
            self._lead("snapshots", lambda: self.snapshot_worker().start())
        if self.cluster is not None and self.settings.mirror_query_index:
            self._lead("query-mirror", self._query_mirror)
        if "relay" in names:
            from context_service.adapters.eventstore.outbox import LogFeed, TrackedPosition
            from context_service.adapters.nats.worker import RelayWorker

            feed, checkpoint = LogFeed(self.store), TrackedPosition(self.tracking, "relay")

            def relay() -> RelayWorker:
                worker = RelayWorker(self.settings, feed, checkpoint)
                if worker.server is not None:  # stopped after every worker, not with the relay
                    self.servers.setdefault("nats", worker.server.stop)
                return worker.start()

            self._lead("relay", relay)

    def _query_mirror(self) -> Any:
        from context_service.adapters.eventstore.indexes import index_records
        from context_service.adapters.eventstore.outbox import TrackedPosition
        from context_service.adapters.kubernetes.query_mirror import QueryMirror

        assert self.cluster is not None
        checkpoint = TrackedPosition(self.tracking, "query-mirror")
        store = self.store
        return QueryMirror(self.cluster, store, checkpoint,
                           lambda stream_id, position: index_records(store, stream_id,
                                                                     position)).start()

    def _lead(self, name: str, start: Callable[[], Any]) -> None:
        # registered before it starts: a stop that arrives once the worker says it is active
        # finds it in ``started`` and stops it (appending after ``start`` left a window)
        leader = LeaderWorker(self.url, f"worker:{name}", start)
        self.started.append(leader)
        leader.start()

    def snapshot_worker(self) -> Any:
        """The snapshot reconciler over this container's log, views and cluster (not started)."""
        from context_service.adapters.kubernetes.snapshot_reconciler import VIEW, SnapshotReconciler

        assert self.cluster is not None
        consistency = LogConsistency(self.store, self.tracking, self.view_runners())
        return SnapshotReconciler(self.cluster, SnapshotObjectsReadsSql(self.datastore),
                                  self.contexts, lambda t: consistency.wait([VIEW], t),
                                  signal=self.store)

    def close(self) -> None:
        """Stop everything in dependency order, one log line per step: each worker at a batch
        boundary (its advisory lock released with it; the relay once JetStream acknowledged
        what it published), the Kubernetes clients, the embedded control plane and NATS, the
        connection pool, and the embedded PostgreSQL last."""
        for worker in reversed(self.started):
            name = str(getattr(worker, "name", "reconciler")).removeprefix("worker:")
            # every worker holds an advisory lock while active and releases it as it stops
            _step("worker stopped", worker.stop, worker=name, advisory_lock="released")
        self.started.clear()
        for closer in reversed(self.closers):
            _step("client closed", closer, quiet=True)
        self.closers.clear()
        for name in SERVER_ORDER[:-1]:
            stop = self.servers.pop(name, None)
            if stop is not None:
                _step(f"embedded {name} stopped", stop, quiet=True)
        _step("query template sessions closed", self.sandbox.close, quiet=True)
        _step("database connections closed", self.store.close)
        stop = self.servers.pop("postgres", None)
        if stop is not None:
            _step("embedded postgres stopped", stop, quiet=True)


class _Runners:
    """A worker's runners, each caught up and started in order (stopped in reverse)."""

    def __init__(self, runners: list[ProjectionRunner]) -> None:
        self.runners = runners

    def stop(self) -> None:
        for runner in reversed(self.runners):
            runner.stop()

    def gauges(self) -> list[tuple[str, str, dict[str, str], float]]:
        """Per projection: the event it is held at, failed attempts at it and events of unknown
        types passed over (``cs_projection_blocked`` and co.), while this instance runs it."""
        return [gauge for runner in self.runners for gauge in runner.gauges()]


def _started_runners(runners: list[ProjectionRunner]) -> _Runners:
    for runner in runners:
        runner.catch_up()
        runner.start()
    return _Runners(runners)


def build(settings: Settings, url: str | None = None, pool_size: int = 8) -> Container:
    """Open the database (starting the embedded one unless ``url`` or CS_DATABASE_URL names
    one), migrate it, and wire the container. Raises ``MigrationError`` when the schema and the
    code disagree; an embedded server started here is stopped again on any failure."""
    owned = url is None and not settings.database_url
    url = url or database_url(settings)
    try:
        datastore = open_datastore(url, pool_size=pool_size,
                                   lock_timeout=settings.lock_wait_seconds)
        try:
            store = EventStore(datastore)
            tracking = PostgresTrackingRecorder(datastore, tracking_table_name=TRACKING_TABLE)
            store.create_tables()
            tracking.create_table()
            migrate(datastore)
            prepare_role(datastore, settings.agent_query_url)
            sandbox = open_sandbox(datastore, url, settings.agent_query_url,
                                   settings.agent_query_connections,
                                   settings.agent_query_wait_seconds,
                                   settings.agent_query_per_workspace)
        except BaseException:
            datastore.close()
            raise
    except BaseException:
        if owned:
            embedded.stop(settings.data_dir)
        raise
    runners: dict[str, ProjectionRunner] = {}
    # fed by the projections runner while it runs in this process; reads the views otherwise
    access = AccessDirectory(AccessReadsSql(datastore),
                             live=lambda: runners["projections"].running,
                             ids=functools.partial(credential_ids, datastore))
    # agents read only admitted collections (agent-context-api §3.4 rule 5)
    catalog = CatalogListing(AdmittedContextsSql(datastore),
                             live=lambda: runners["projections"].running)
    container = Container(settings, url, datastore, store, tracking, ContextApplication(store),
                          PoolApplication(store), WorkspaceApplication(store),
                          CredentialApplication(store), access,
                          ContextSetApplication(store), ContextPackApplication(store),
                          QueryTemplateApplication(store), sandbox, catalog, runners)
    if owned:
        container.servers["postgres"] = functools.partial(embedded.stop, settings.data_dir)
    for name, group in projection_workers().items():
        # query-index events carry whole indexes (up to a 1 MiB body each): read fewer at once
        batch = 100 if RUNNER_WORKER[name] == "query-index" else 2000
        listeners: list[Listener] = [access, catalog] if name == "projections" else []
        runners[name] = ProjectionRunner(store, tracking, group, batch_size=batch,
                                         listeners=listeners)
    return container


def check_model() -> None:
    """Load the embedding model now (``ModelUnavailable`` when its files are missing)."""
    load()


def pack_ports(container: Container, warm: bool = False) -> PackPorts:
    """The read ports of packs over this container's database and the embedding model;
    ``warm``: keep the corpus cache loaded with the current indexes (stopped with the
    container)."""
    embedder = TextFeaturesModel()

    def count(text: str) -> int:
        return embedder.embedder.count(text)

    loader = CorpusLoader(container.datastore, count,
                          limit_bytes=container.settings.pack_cache_mib * MiB)
    folds = FoldCache(PackInputReadsSql(container.datastore, cache_size=0))
    matrices = VectorMatrices(container.datastore) if warm else None
    if warm:
        warmer = CorpusWarmer(loader, matrices=matrices,
                              tracking_table=container.tracking.tracking_table_name).start()
        container.closers.append(warmer.stop)
        container.gauge_sources.append(warmer.gauges)
        # what the in-process caches hold, and the folds forgotten as the runner applies
        container.gauge_sources.extend([warmer.cache_gauges, folds.gauges,
                                        container.catalog.gauges, word_id_gauges])
        container.runners["projections"].listeners.append(folds)
        # a pack's walk allocates thousands of short-lived objects; at the default threshold
        # of 700 they set off collections whose full passes cost 20-30 ms each (measured)
        gc.set_threshold(GC_THRESHOLD, *gc.get_threshold()[1:])
        # one BLAS thread: requests run side by side, and a matrix product spread over both
        # cores spins against them (hybrid p95 on 2 busy cores: 100 ms with one, 520 with two)
        threadpool_limits(limits=1, user_api="blas")
    retrieval = FastRetrieval(loader, container.datastore,
                              lambda text: embedder.embedder.embed(text), matrices=matrices)
    container.closers.append(retrieval.close)
    return PackPorts(inputs=folds, corpus=loader,
                     retrieval=retrieval, count_tokens=count)


def agent_services(container: Container) -> AgentServices:
    settings = container.settings
    limiter = RateLimiter(settings.agent_rate_per_second, settings.agent_rate_burst)
    container.gauge_sources.append(limiter.gauges)
    return AgentServices(
        workspaces=container.workspaces, credentials=container.credentials,
        directory=container.access, reads=AccessReadsSql(container.datastore),
        catalog=container.catalog, admission=AdmittedContextsSql(container.datastore),
        key=credential_key(container.datastore, settings.credential_key),
        limiter=limiter,
        clock=utc_now, context_sets=container.context_sets)


def pack_services(container: Container, ports: PackPorts) -> PackServices:
    """The pack and replay routes' ports: the pack-input reads, the replay stream and view."""
    return PackServices(ports=ports, commands=container.context_packs,
                        replays=ReplayReadsSql(container.datastore), head=container.store.head,
                        retention=timedelta(seconds=container.settings.replay_retention_seconds))


def services(container: Container) -> Services:
    reads = ContextReadsSql(container.datastore)
    consistency = LogConsistency(container.store, container.tracking, container.view_runners())
    pool_reads = PoolReadsSql(container.datastore)
    guard = None
    if container.cluster is not None:
        guard = ClaimNameGuard(container.cluster, pool_namespace=container.settings.namespace,
                               live_pool=_live_pool(consistency, pool_reads,
                                                    container.settings.read_wait_seconds))
    ports = pack_ports(container, warm=True)
    failures = AuthFailures(container.settings.auth_failure_per_second,
                            container.settings.auth_failure_burst)
    container.gauge_sources.extend([failures.gauges, container.access.gauges,
                                    container.sandbox.cache_gauges])
    return Services(contexts=container.contexts, reads=reads, consistency=consistency,
                    query=QueryIndexReadsSql(container.datastore),
                    timeline=Timeline(container.store),
                    fields=FieldReadsSql(container.datastore),
                    require_subject=container.settings.require_subject,
                    gateway_secret=container.settings.gateway_secret,
                    read_wait_seconds=container.settings.read_wait_seconds,
                    pools=PoolServices(
                        pools=container.pools, reads=pool_reads,
                        cluster=container.cluster, namespace=container.settings.namespace,
                        sandbox_image=container.settings.sandbox_image,
                        sandbox_service_account=container.settings.sandbox_service_account),
                    agent=agent_services(container),
                    context_sets=ContextSetServices(
                        commands=container.context_sets,
                        reads=ContextSetReadsSql(container.datastore),
                        active_templates=functools.partial(_active_templates, container)),
                    query_templates=QueryTemplateServices(
                        commands=container.query_templates,
                        reads=QueryTemplateReadsSql(container.datastore),
                        sandbox=container.sandbox),
                    packs=pack_services(container, ports),
                    auth_failures=failures,
                    settings_ui=SettingsUi(WorkspacesSql(container.datastore),
                                           dev_subject=container.settings.settings_dev_subject),
                    name_guard=guard,
                    # a GC holds its turn while it waits for the views (the read wait)
                    source_turn=AdvisoryTurns(container.url,
                                              container.settings.lock_wait_seconds
                                              + container.settings.read_wait_seconds),
                    readiness=functools.partial(schema_problem, container.url),
                    gauges=container.gauges,
                    # the event loop's append connection closes with the loop
                    on_shutdown=[container.store.close_async])


def _live_pool(consistency: LogConsistency, reads: PoolReadsSql,
               wait_seconds: float) -> Callable[[str], PoolState | None]:
    """One live pool by name, read once the pool view has caught up with the log, so a pool
    recorded just before a context create takes its workspace claim's name; 503 past the read
    wait, as the routes reading that view answer."""

    def live_pool(name: str) -> PoolState | None:
        views_caught_up(consistency, ("pool_status",), wait_seconds)
        return reads.get(name)

    return live_pool


def _active_templates(container: Container, namespace: str,
                      named: Iterable[str]) -> frozenset[str]:
    return frozenset(t for t in named
                     if container.query_templates.load(namespace, t)[1].active)


def connect_cluster(container: Container) -> None:
    """Kubernetes per CS_KUBE: in-cluster, a kubeconfig, or the local control plane (started
    here when nothing else is configured); nothing when CS_KUBE=off (nor the client's import,
    about 0.3 s)."""
    settings = container.settings
    if settings.kube_mode == "off":
        return
    from context_service.adapters.kubernetes import client
    from context_service.adapters.kubernetes.cluster import KubernetesCluster
    from context_service.adapters.kubernetes.rest import Rest

    try:
        mode = client.resolve_mode(settings)
    except client.KubeConfigError:
        if settings.kube_mode != "auto":
            raise
        mode = "local"
    if mode == "local":
        try:
            plane = _start_local_control_plane(settings)
        except NotInstalledError as exc:
            if settings.kube_mode == "local":
                raise
            log.warning(f"{exc}; running without Kubernetes")
            return
        except Exception:
            if settings.kube_mode == "local":
                raise
            # auto: serve contexts and the log without Kubernetes rather than not at all
            log.exception("local control plane unavailable; running without Kubernetes")
            return
        container.servers["kubernetes"] = plane.stop
    api = client.api_client(settings, mode)
    container.closers.append(lambda: client.close(api))
    rest = Rest(api, budget=settings.kube_request_budget_seconds)
    container.cluster = KubernetesCluster(rest, pool_namespace=settings.namespace)
    log.info("kubernetes connected", extra={"mode": mode})


def _start_local_control_plane(settings: Settings) -> Any:
    try:
        local = importlib.import_module(LOCAL_CONTROL_PLANE)
    except ModuleNotFoundError as exc:
        if exc.name is None or not LOCAL_CONTROL_PLANE.startswith(exc.name):
            raise  # the module is there; something it imports is not
        raise NotInstalledError(
            "the local Kubernetes control plane is a development tool of a source checkout "
            "(make run) and this installation does not include it: set CS_KUBE to in-cluster, "
            "kubeconfig or off") from exc
    return local.start_local_control_plane(settings)


def adopt(container: Container) -> Any:
    """Import labelled objects the log does not know yet (idempotent; spec 6.10)."""
    from context_service.adapters.eventstore.adoption import adopt as run_adoption

    if container.cluster is None:
        return None
    return run_adoption(container.cluster, container.store, container.settings.namespace)


def app(container: Container) -> Litestar:
    """The HTTP application over ``container`` (imported here: the commands that only read or
    rebuild the log start without the routes and the MCP SDK)."""
    from context_service.http.app import create_app

    return create_app(services(container),
                      allowed_hosts=container.settings.allowed_host_names)

"""What the HTTP layer needs from the rest of the service, as ports; bootstrap supplies them."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from context_service.domain.agent_credentials.commands import CredentialCommand
from context_service.domain.agent_credentials.state import Credential, CredentialsState
from context_service.domain.cluster import Cluster
from context_service.domain.context.commands import Command
from context_service.domain.context.state import ContextState
from context_service.domain.context_set.commands import ContextSetCommand
from context_service.domain.context_set.state import ContextSetState
from context_service.domain.events import Subject
from context_service.domain.pool.commands import PoolCommand
from context_service.domain.pool.state import PoolState
from context_service.domain.query_template.commands import QueryTemplateCommand
from context_service.domain.query_template.events import Parameter, QueryTemplateRun
from context_service.domain.query_template.state import QueryTemplateState
from context_service.domain.workspace.commands import MembershipCommand
from context_service.domain.workspace.state import Member, WorkspaceState
from context_service.projections.context_catalog.listing import Listed
from context_service.projections.context_sets.view import ContextSetReads
from context_service.projections.pool_status.projection import PoolReads
from context_service.projections.query_index.reads import QueryReads
from context_service.projections.query_templates.view import QueryTemplateReads
from context_service.projections.reads import Consistency, ContextReads
from context_service.projections.studied_fields.reads import FieldReads

if TYPE_CHECKING:  # these modules read ``Services`` themselves
    from context_service.http.agent.pack_services import PackServices
    from context_service.http.agent.ratelimit import AuthFailures
    from context_service.http.routes.timeline import TimelineReads
    from context_service.http.settings.ports import SettingsUi

Gauge = tuple[str, str, dict[str, str], float]  # name, help, labels, value

S_co = TypeVar("S_co", covariant=True)


class CommandOutcome(Protocol):
    @property
    def state(self) -> ContextState: ...

    @property
    def position(self) -> int: ...


class ContextCommands(Protocol):
    def authorize(self, namespace: str, name: str, actor: Subject,
                  permission: str) -> ContextState:
        """On the log now (a write checking the permission before it reads the body)."""

    def execute(self, namespace: str, name: str, command: Command) -> CommandOutcome: ...

    async def authorize_async(self, namespace: str, name: str, actor: Subject,
                              permission: str, fresh: bool = False) -> ContextState:
        """On the cached state unless ``fresh``; a refusal is confirmed against the log."""

    async def execute_async(self, namespace: str, name: str,
                            command: Command) -> CommandOutcome: ...


class PoolCommands(Protocol):
    def load(self, name: str) -> tuple[int, PoolState]: ...

    def execute(self, command: PoolCommand) -> Any: ...


@dataclass
class PoolServices:
    """What the sandbox-pool and storage-class routes need; ``cluster`` is None without
    Kubernetes (those routes then answer 500)."""

    pools: PoolCommands
    reads: PoolReads
    cluster: Cluster | None
    namespace: str
    sandbox_image: str
    sandbox_service_account: str = ""


class Outcome(Protocol[S_co]):
    @property
    def state(self) -> S_co: ...

    @property
    def position(self) -> int: ...


class WorkspaceCommands(Protocol):
    def role_of(self, namespace: str, subject: Subject, fresh: bool = False) -> str | None: ...

    def authorize(self, namespace: str, actor: Subject, permission: str,
                  fresh: bool = False) -> WorkspaceState: ...

    def execute(self, namespace: str,
                command: MembershipCommand) -> Outcome[WorkspaceState]: ...


class CredentialCommands(Protocol):
    def execute(self, namespace: str,
                command: CredentialCommand) -> Outcome[CredentialsState]: ...


class AccessLookups(Protocol):
    """What every agent request reads: the in-process access directory."""

    def credential(self, credential_id: str) -> Credential | None: ...

    def role(self, namespace: str, subject: Subject) -> str | None: ...


class CatalogLookup(Protocol):
    def listed(self, namespace: str) -> Listed: ...


class AdmissionLookup(Protocol):
    def admitted_at(self, namespace: str, position: int) -> frozenset[str]:
        """The collections whose generation that lived at log ``position`` may reach agents
        (agent-context-api §3.4 rule 5), deleted ones included."""


class AccessReads(AccessLookups, Protocol):
    def credentials(self, namespace: str) -> list[Credential]: ...

    def members(self, namespace: str) -> list[Member]: ...


class ContextSetLookup(Protocol):
    def active(self, namespace: str, set_id: str) -> bool:
        """Whether ``set_id`` names an active context set of the namespace (as of the views)."""


class NoContextSets:
    """Until context sets are recorded, no set is active."""

    def active(self, namespace: str, set_id: str) -> bool:
        return False


class ContextSetCommands(Protocol):
    def execute(self, namespace: str,
                command: ContextSetCommand) -> Outcome[ContextSetState]: ...


@dataclass
class ContextSetServices:
    """What the context-set and library routes need: the write model and the context_sets
    view; ``active_templates`` tells which of the named query templates of a namespace are
    active (read from the log, so a template registered just before counts)."""

    commands: ContextSetCommands
    reads: ContextSetReads
    active_templates: Callable[[str, Iterable[str]], frozenset[str]] = (
        lambda _namespace, _named: frozenset())


class QueryTemplateCommands(Protocol):
    def load(self, namespace: str, template_id: str) -> tuple[int, QueryTemplateState]: ...

    def execute(self, namespace: str,
                command: QueryTemplateCommand) -> Outcome[QueryTemplateState]: ...

    def record_run(self, namespace: str, event: QueryTemplateRun) -> int: ...


class Sandbox(Protocol):
    """The execution sandbox (``adapters/postgres/sandbox``)."""

    @property
    def problem(self) -> str | None: ...

    def check(self, statement: str, parameters: tuple[Parameter, ...]) -> str | None: ...

    def run(self, statement: str, parameters: tuple[Parameter, ...], values: Sequence[Any],
            namespace: str, collections: Sequence[str], timeout_ms: int,
            max_rows: int) -> Any: ...


@dataclass
class QueryTemplateServices:
    """What the template administration and run routes need."""

    commands: QueryTemplateCommands
    reads: QueryTemplateReads
    sandbox: Sandbox


@dataclass
class AgentServices:
    """What the membership, credential and agent routes need."""

    workspaces: WorkspaceCommands
    credentials: CredentialCommands
    directory: AccessLookups
    reads: AccessReads
    key: bytes  # the HMAC key of credential secrets
    limiter: Any  # http.agent.ratelimit.RateLimiter
    clock: Callable[[], datetime]
    # the live contexts of a workspace (``ContextReads.list`` without a subject), kept in
    # memory while this process's runner maintains the catalog, read from the view otherwise
    catalog: CatalogLookup
    # rule 5 at a time-travel point, for the bootstrap administrator's deleted collections
    admission: AdmissionLookup
    context_sets: ContextSetLookup = field(default_factory=NoContextSets)


@dataclass
class Services:
    contexts: ContextCommands
    reads: ContextReads
    consistency: Consistency
    query: QueryReads  # the query-index search
    timeline: TimelineReads  # a context's stored events
    fields: FieldReads  # the studied fields of the agent API
    require_subject: bool = False
    gateway_secret: str = ""  # CS_GATEWAY_SECRET; empty: X-Context-Subject needs no proof
    read_wait_seconds: float = 5.0
    pools: PoolServices | None = None
    agent: AgentServices | None = None
    context_sets: ContextSetServices | None = None
    query_templates: QueryTemplateServices | None = None
    packs: PackServices | None = None  # None: context packs are not configured
    auth_failures: AuthFailures | None = None  # None: failed authentications are not throttled
    settings_ui: SettingsUi | None = None  # None: the pages' defaults
    # refuses a context name whose claim exists in the cluster, or would be a live recorded
    # pool's workspace claim in CS_NAMESPACE; None without Kubernetes
    name_guard: Callable[[str, str], None] | None = None
    # clones of a context and its GC runs take turns across replicas (spec 6.6 step 4): entered
    # with (namespace, source context); None: only this process's turns
    source_turn: Callable[[str, str], AbstractContextManager[None]] | None = None
    readiness: Callable[[], str | None] | None = None  # the schema problem, if any
    gauges: Callable[[], list[Gauge]] = list  # scrape-time gauges for /metrics
    on_shutdown: list[Callable[[], Any]] = field(default_factory=list)

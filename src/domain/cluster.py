"""The cluster port: everything the service asks of Kubernetes, in the service's own terms.

Desired objects go in as small frozen Structs (rendered into the exact shapes of spec §6 by the
adapter), observations come back as frozen Structs, and every failure is one ``ClusterError``.
The reconciler and the request-time checks are written against ``Cluster``; tests use a fake.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from typing import Any, Literal, Protocol

import msgspec

MANAGED_BY = "app.kubernetes.io/managed-by"
MANAGER = "context-service"
NAME_LABEL = "context.rossoctl.io/name"
TYPE_LABEL = "context.rossoctl.io/type"
POOL_LABEL = "context.rossoctl.io/pool"
SNAPSHOT_LABEL = "context.rossoctl.io/snapshot"
REPLICAS_KEY = "context.rossoctl.io/replicas"
DEFAULT_CLASS_ANNOTATIONS = (
    "storageclass.kubernetes.io/is-default-class",
    "storageclass.beta.kubernetes.io/is-default-class",
)
DEFAULT_SNAPSHOT_CLASS_ANNOTATION = "snapshot.storage.kubernetes.io/is-default-class"
# Context PVC annotations the reconciler keeps current: absent from the desired set means removed.
KEPT_CURRENT_ANNOTATIONS = frozenset(
    {
        "context.rossoctl.io/access-grants",
        "context.rossoctl.io/current-revision",
        "context.rossoctl.io/snapshot-retention",
    }
)

# API resources the service uses besides the core ones: (group, version, plural).
SANDBOXES = ("agents.x-k8s.io", "v1beta1", "sandboxes")
SANDBOX_CLAIMS = ("extensions.agents.x-k8s.io", "v1beta1", "sandboxclaims")
SANDBOX_TEMPLATES = ("extensions.agents.x-k8s.io", "v1beta1", "sandboxtemplates")
SANDBOX_WARM_POOLS = ("extensions.agents.x-k8s.io", "v1beta1", "sandboxwarmpools")
VOLUME_SNAPSHOTS = ("snapshot.storage.k8s.io", "v1", "volumesnapshots")
VOLUME_SNAPSHOT_CLASSES = ("snapshot.storage.k8s.io", "v1", "volumesnapshotclasses")
CUSTOM_RESOURCES = (
    SANDBOXES,
    SANDBOX_CLAIMS,
    SANDBOX_TEMPLATES,
    SANDBOX_WARM_POOLS,
    VOLUME_SNAPSHOTS,
    VOLUME_SNAPSHOT_CLASSES,
)

API_NOT_INSTALLED = "ApiNotInstalled"
UNAVAILABLE = "Unavailable"


class ClusterError(Exception):
    """A Kubernetes request failed. ``status`` is the HTTP status (503 when no answer came)."""

    def __init__(self, status: int, reason: str, message: str) -> None:
        super().__init__(f"{status} {reason}: {message}")
        self.status = status
        self.reason = reason
        self.message = message

    @property
    def not_found(self) -> bool:
        return self.status == 404

    @property
    def conflict(self) -> bool:
        return self.status == 409

    @property
    def api_not_installed(self) -> bool:
        """The resource type itself is unknown to the server (CRD not installed)."""
        return self.reason == API_NOT_INSTALLED


# --- names ------------------------------------------------------------------------------------


def context_claim_name(context: str) -> str:
    return f"context-{context}"


def sandbox_name(pool: str, index: int) -> str:
    return f"sandbox-{pool}-{index}"


def sandbox_claim_name(pool: str, index: int) -> str:
    return f"claim-{pool}-{index}"


def workspace_claim_name(pool: str, index: int | None) -> str:
    """``<pool>-workspace`` for a shared workspace (index None), ``<pool>-workspace-<i>`` else."""
    return f"{pool}-workspace" if index is None else f"{pool}-workspace-{index}"


def snapshot_object_name(context: str, snapshot: str) -> str:
    """The VolumeSnapshot name of spec §6.6: deterministic, at most 63 characters."""
    base = f"context-{context}-{snapshot}"
    if len(base) <= 63:
        return base
    digest = hashlib.sha256(base.encode()).hexdigest()[:8]
    return f"{base[:54].rstrip('-')}-{digest}"


# --- observations -----------------------------------------------------------------------------


class StorageClassInfo(msgspec.Struct, frozen=True, kw_only=True):
    """A StorageClass with spec §1.4 defaults applied."""

    name: str
    default: bool
    provisioner: str
    volume_binding_mode: str = "Immediate"
    reclaim_policy: str = "Delete"
    allow_volume_expansion: bool = False


class ClaimInfo(msgspec.Struct, frozen=True, kw_only=True):
    """A PersistentVolumeClaim as observed. ``phase`` is ``Pending`` when the server gave none."""

    namespace: str
    name: str
    phase: str
    storage_class: str  # "" when neither requested nor assigned
    access_modes: tuple[str, ...]
    size: str  # spec.resources.requests.storage, canonical as the server writes it
    capacity: str = ""  # status.capacity.storage once bound
    deleting: bool = False
    labels: dict[str, str] = {}
    annotations: dict[str, str] = {}
    data_source: str = ""  # name of a VolumeSnapshot the claim was cloned from
    created_at: datetime | None = None
    uid: str = ""


class PodConsumer(msgspec.Struct, frozen=True, kw_only=True):
    """A Pod mounting a claim, mapped by the spec §3.6 rules."""

    namespace: str
    pod: str
    service_account: str  # "default" when the Pod names none
    access_mode: Literal["readWrite", "readOnly"]
    active: bool  # Running and not being deleted
    since: datetime | None  # the Pod's creation time

    @property
    def subject_name(self) -> str:
        return f"{self.namespace}/{self.service_account}"


class PodInfo(msgspec.Struct, frozen=True, kw_only=True):
    namespace: str
    name: str
    phase: str  # "Pending" when the server gave none
    ready: bool  # condition Ready == "True"
    deleting: bool = False
    labels: dict[str, str] = {}
    claims: tuple[str, ...] = ()  # claim names of persistentVolumeClaim volumes
    created_at: datetime | None = None


class SandboxInfo(msgspec.Struct, frozen=True, kw_only=True):
    namespace: str
    name: str
    ready: bool  # condition Ready == "True"
    reason: str = ""  # the Ready condition's reason, "" when there is none
    deleting: bool = False
    labels: dict[str, str] = {}
    annotations: dict[str, str] = {}
    created_at: datetime | None = None


class SandboxClaimInfo(msgspec.Struct, frozen=True, kw_only=True):
    namespace: str
    name: str
    warm_pool: str  # spec.warmPoolRef.name
    ready: bool
    reason: str = ""
    sandbox: str = ""  # status.sandbox.name once bound
    deleting: bool = False
    labels: dict[str, str] = {}
    created_at: datetime | None = None


class SandboxTemplateInfo(msgspec.Struct, frozen=True, kw_only=True):
    namespace: str
    name: str
    spec: dict[str, Any] | None  # the raw spec (JSON object); None when absent


class WarmPoolInfo(msgspec.Struct, frozen=True, kw_only=True):
    namespace: str
    name: str
    template: str  # spec.sandboxTemplateRef.name
    replicas: int
    ready_replicas: int = 0
    deleting: bool = False  # its sandboxes go with it: no claim on it is ever served


# Objects whose fields the service sets were edited: (kind, name) -> paths of the edited fields,
# kind "pvc", "sandbox" or "sandboxclaim".
Drift = dict[tuple[str, str], tuple[str, ...]]


class PoolObjects(msgspec.Struct, frozen=True, kw_only=True):
    """Objects behind pools: Sandboxes, SandboxClaims and PVCs carrying managed-by and the pool
    label, and Pods carrying the pool label (claimed Pods do not carry managed-by). ``drift``
    names the objects asked about (``Cluster.list_pool_objects``) that no longer hold what
    the service set on them."""

    sandboxes: tuple[SandboxInfo, ...] = ()
    sandbox_claims: tuple[SandboxClaimInfo, ...] = ()
    claims: tuple[ClaimInfo, ...] = ()
    pods: tuple[PodInfo, ...] = ()
    drift: Drift = {}


class SnapshotClassInfo(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    driver: str
    deletion_policy: str
    default: bool  # snapshot.storage.kubernetes.io/is-default-class == "true"
    parameters: dict[str, str] = {}


class SnapshotInfo(msgspec.Struct, frozen=True, kw_only=True):
    namespace: str
    name: str
    ready_to_use: bool
    error_message: str = ""
    restore_size: str = ""
    source_claim: str = ""
    snapshot_class: str = ""
    deleting: bool = False
    labels: dict[str, str] = {}
    annotations: dict[str, str] = {}
    created_at: datetime | None = None


MAX_SNAPSHOT_ERROR = 4096  # characters of a driver's error kept: the log refuses events > 1 MB


def recordable_error(error: str) -> str:
    """A driver's error as the log can hold it. A driver writes what it likes: a U+0000 held
    every view at its event (PostgreSQL cannot store it) and a message above 1 MB was refused
    (the snapshot stayed ``creating`` for ever; adopting its context failed)."""
    return error.replace("\x00", "\ufffd")[:MAX_SNAPSHOT_ERROR]


class Change(msgspec.Struct, frozen=True, kw_only=True):
    """A watched object changed (kind is the plural resource name, e.g. ``pods``)."""

    kind: str
    namespace: str
    name: str
    deleted: bool = False


# --- desired objects --------------------------------------------------------------------------


class ContextClaim(msgspec.Struct, frozen=True, kw_only=True):
    """The context PVC of spec §6.3, named ``context-<context>``."""

    namespace: str
    context: str
    type: str
    size: str
    access_mode: str
    storage_class: str = ""  # "" lets the cluster default apply
    annotations: dict[str, str] = {}  # kept current; see KEPT_CURRENT_ANNOTATIONS
    source_snapshot: str = ""  # VolumeSnapshot object name of a clone's dataSource


class WorkspaceClaim(msgspec.Struct, frozen=True, kw_only=True):
    """A pool workspace PVC of spec §6.7 (index None: the shared ``<pool>-workspace``)."""

    namespace: str
    pool: str
    index: int | None
    replicas: int
    size: str
    access_mode: str
    storage_class: str = ""


class BuiltinRuntime(msgspec.Struct, frozen=True, kw_only=True, tag="builtin"):
    """The built-in sandbox runtime (no profile)."""

    image: str
    service_account: str = ""


class ProfileRuntime(msgspec.Struct, frozen=True, kw_only=True, tag="profile"):
    """A copy of a SandboxTemplate ``spec`` (validated at pool creation)."""

    profile: str
    template_spec: dict[str, Any]
    service_account: str = ""  # used only when the template names none


Runtime = BuiltinRuntime | ProfileRuntime


class PoolSandbox(msgspec.Struct, frozen=True, kw_only=True):
    """Sandbox ``sandbox-<pool>-<index>`` of spec §6.7, mounting ``claim`` at /workspace."""

    namespace: str
    pool: str
    index: int
    replicas: int
    claim: str  # pvcName(i)
    runtime: Runtime
    read_only: bool = False
    existing_claim: bool = False  # the claim is the caller's (existing-PVC strategy)


class PoolSandboxClaim(msgspec.Struct, frozen=True, kw_only=True):
    """SandboxClaim ``claim-<pool>-<index>`` of spec §6.7 (warm-pool strategy)."""

    namespace: str
    pool: str
    index: int
    warm_pool: str


# A pool's object as the service renders it: what drift is checked against and restored to.
PoolObject = WorkspaceClaim | PoolSandbox | PoolSandboxClaim


class ContextSnapshot(msgspec.Struct, frozen=True, kw_only=True):
    """The VolumeSnapshot of spec §6.6 for snapshot ``snapshot`` of context ``context``."""

    namespace: str
    context: str
    snapshot: str
    type: str
    snapshot_class: str
    size: str
    access_mode: str
    storage_class: str
    source_revision: str = ""
    protected: bool = False
    user_labels: dict[str, str] = {}


class QueryIndexMirror(msgspec.Struct, frozen=True, kw_only=True):
    """The optional ConfigMap mirror of a context's query index (spec §6.5)."""

    namespace: str
    context: str
    type: str
    revision: str
    index_json: str  # the ``index.json`` data: {"revision": ..., "records": [...]}


def query_mirror_name(context: str) -> str:
    return snapshot_object_name(context, "query")  # the same 63-character rule as §6.6


# --- the port ---------------------------------------------------------------------------------


class Watch(Protocol):
    def stop(self) -> None: ...


class Cluster(Protocol):
    """Kubernetes as the service sees it. Creates are create-if-absent and return whether they
    created; restores write back the fields the service sets on an existing object (what an
    operator edited) and return True; deletes ignore not-found and return whether something was
    there. Lookups return None when the object, or its API, does not exist. Failures raise
    ``ClusterError``."""

    def has_resource(self, group: str, version: str, plural: str) -> bool: ...
    def list_storage_classes(self) -> list[StorageClassInfo]: ...
    def get_claim(self, namespace: str, name: str) -> ClaimInfo | None: ...
    def ensure_context_claim(self, claim: ContextClaim) -> bool: ...
    def ensure_workspace_claim(self, claim: WorkspaceClaim) -> bool: ...
    def restore_workspace_claim(self, claim: WorkspaceClaim) -> bool:
        """Put back the labels the service set on a pool PVC (its spec cannot change)."""
        ...

    def delete_claim(self, namespace: str, name: str) -> bool: ...
    def list_claim_consumers(self, namespace: str, claim: str) -> list[PodConsumer]: ...
    def get_sandbox_template(self, namespace: str, name: str) -> SandboxTemplateInfo | None: ...
    def get_warm_pool(self, namespace: str, name: str) -> WarmPoolInfo | None: ...
    def get_sandbox(self, namespace: str, name: str) -> SandboxInfo | None: ...
    def ensure_sandbox(self, sandbox: PoolSandbox) -> bool: ...
    def restore_sandbox(self, sandbox: PoolSandbox) -> bool:
        """Put back the labels, annotations and spec fields the service set; fields it does not
        set keep their values. Raises ClusterError 400/422 when the server refuses them."""
        ...

    def delete_sandbox(self, namespace: str, name: str) -> bool: ...
    def get_sandbox_claim(self, namespace: str, name: str) -> SandboxClaimInfo | None: ...
    def ensure_sandbox_claim(self, claim: PoolSandboxClaim) -> bool: ...
    def restore_sandbox_claim(self, claim: PoolSandboxClaim) -> bool: ...
    def delete_sandbox_claim(self, namespace: str, name: str) -> bool:
        """Deletes with foreground propagation (spec §6.9)."""
        ...

    def list_pool_objects(self, namespace: str, pool: str | None = None,
                          wanted: Iterable[PoolObject] = ()) -> PoolObjects:
        """Objects of one pool, or of every pool when ``pool`` is None (adoption), with the
        ``drift`` of those ``wanted`` found: told from the same lists, so it costs no request."""
        ...

    def list_snapshot_classes(self) -> list[SnapshotClassInfo]:
        """Raises ClusterError with ``api_not_installed`` when the snapshot API is missing."""
        ...

    def ensure_snapshot(self, snapshot: ContextSnapshot) -> bool: ...
    def get_snapshot(self, namespace: str, name: str) -> SnapshotInfo | None: ...
    def delete_snapshot(self, namespace: str, name: str) -> bool: ...
    def list_snapshots(self, namespace: str, context: str | None = None) -> list[SnapshotInfo]:
        """Managed VolumeSnapshots of one context, or of every context when None."""
        ...

    def list_context_claims(self, namespace: str | None = None) -> list[ClaimInfo]:
        """Managed PVCs with a context name label, in one namespace or all (adoption)."""
        ...

    def apply_query_mirror(self, mirror: QueryIndexMirror) -> None:
        """Create or replace the mirror ConfigMap (server-side apply)."""
        ...

    def delete_query_mirror(self, namespace: str, context: str) -> bool: ...

    def get_query_mirror(self, namespace: str, context: str) -> str | None:
        """The mirror's ``index.json`` when the ConfigMap exists (adoption reads it)."""
        ...

    def watch(self, namespace: str | None, on_change: Callable[[Change], None]) -> Watch:
        """Call ``on_change`` (from another thread) whenever a PVC, Pod, Sandbox, SandboxClaim
        or VolumeSnapshot changes; a hint to reconcile early, never a replacement for resync."""
        ...


def is_default_class(annotations: Mapping[str, str]) -> bool:
    """Spec §1.4: the GA or the beta default-class annotation equals "true"."""
    return any(annotations.get(key) == "true" for key in DEFAULT_CLASS_ANNOTATIONS)

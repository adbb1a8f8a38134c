"""Sandbox pools (``/v1/sandbox-pools``) and storage classes (``/v1/storage-classes``), as
msgspec Structs.

A pool request selects its strategy by the keys it sends (a managed workspace, an existing
claim or a warm pool): one body, whose schema states the three shapes as a ``oneOf``. Answers
are ``Closed``, keys in the order the routes write them.
"""

from __future__ import annotations

from typing import Annotated, Any

from msgspec import UNSET, UnsetType

from context_service.contract.base import Closed, Request, doc, one_of
from context_service.contract.values import Free, Name, Size, Subdomain

# --- requests ---------------------------------------------------------------------------------

# The three shapes, each by what sets it apart; a key whose schema is ``false`` is one the shape
# leaves out (JSON Schema's ``false`` accepts no value).
_SHAPES: list[dict[str, Any]] = [
    # a managed workspace (one PVC per sandbox, or one shared): size and access mode
    {"required": ["workspace"], "properties": {"warmPoolRef": False, "workspace": {
        "required": ["size", "accessMode"],
        "properties": {"claimName": False, "readOnly": False}}}},
    # an existing claim, mounted read-only or not
    {"required": ["workspace"], "properties": {"warmPoolRef": False, "workspace": {
        "required": ["claimName", "readOnly"],
        "properties": {"size": False, "accessMode": False, "storageClass": False}}}},
    # a warm pool, which brings its own template and storage: no workspace settings
    {"required": ["warmPoolRef"], "properties": {"sandboxProfile": False,
                                                 "workspace": {"maxProperties": 0}}},
]


class PoolWorkspaceRequest(Request, kw_only=True):
    size: Size | None = None
    access_mode: Annotated[str, one_of("ReadWriteOnce", "ReadWriteMany")] | None = None
    storage_class: Free | None = None
    claim_name: Subdomain | None = None
    read_only: bool | None = None


class CreatePoolRequest(Request, kw_only=True):
    """``POST /v1/sandbox-pools``."""

    REQUIRED = ("name", "replicas")
    EXTRA = {"oneOf": _SHAPES}
    name: Name | None = None
    replicas: Annotated[int, doc(minimum=1, maximum=100)] | None = None
    sandbox_profile: Subdomain | None = None
    warm_pool_ref: Subdomain | None = None
    workspace: PoolWorkspaceRequest | None = None


# --- answers ----------------------------------------------------------------------------------


class PoolWorkspace(Closed, kw_only=True):
    """The declared workspace, or the claim as read (existing-claim pools); ``size`` and
    ``accessMode`` are empty for a warm pool."""

    size: str
    access_mode: str
    storage_class: str | UnsetType = UNSET
    claim_name: str | UnsetType = UNSET
    read_only: bool | UnsetType = UNSET


class PoolResource(Closed, kw_only=True):
    """A Kubernetes object behind a pool, as last observed."""

    kind: str
    name: str
    status: str


class Pool(Closed, kw_only=True):
    """An allocation: sandbox capacity with a declared workspace topology."""

    name: str
    status: Annotated[str, one_of("provisioning", "ready")]
    replicas: int
    ready_replicas: int
    sandbox_selector: Annotated[str, doc("the label selector of the pool's sandbox Pods")]
    sandbox_profile: str | UnsetType = UNSET
    warm_pool_ref: str | UnsetType = UNSET
    workspace: PoolWorkspace
    resources: list[PoolResource] | UnsetType = UNSET


class PoolList(Closed, kw_only=True):
    items: Annotated[list[Pool], doc("every live allocation, by name")]


class StorageClass(Closed, kw_only=True):
    name: str
    default: bool
    provisioner: str
    volume_binding_mode: str
    reclaim_policy: str
    allow_volume_expansion: bool


class StorageClassList(Closed, kw_only=True):
    items: Annotated[list[StorageClass], doc("the cluster's StorageClasses, by name")]

"""Context lifecycle (``/v1/namespaces/{namespace}/contexts/{name}/...``): snapshots, clones,
restore, retention, garbage collection and capabilities, as msgspec Structs.

Answers are ``Closed`` and list their keys in the order the routes write them; a key a route
omits when empty (or ``false``) is ``UNSET`` here. Clones, restore and retention answer a
``ContextResource`` (``contract.contexts``).
"""

from __future__ import annotations

from typing import Annotated, Literal

from msgspec import UNSET, UnsetType

from context_service.contract.base import Closed, Request, doc, one_of
from context_service.contract.values import Duration, Free, Label, Name, Stamp, Strings

# --- requests ---------------------------------------------------------------------------------


class CreateSnapshotRequest(Request, kw_only=True):
    """``POST .../snapshots``; ``labels.protected`` equal to ``true`` (any case) protects the
    snapshot too."""

    REQUIRED = ("name",)
    name: Label | None = None
    snapshot_class: Free | None = None
    protected: bool | None = None
    labels: Strings | None = None


class CreateCloneRequest(Request, kw_only=True):
    """``POST .../clones``: a new context of the namespace from a ready snapshot."""

    REQUIRED = ("name", "snapshot")
    name: Name | None = None
    snapshot: Label | None = None


class RestoreRequest(Request, kw_only=True):
    """``POST .../restore``."""

    REQUIRED = ("snapshot",)
    snapshot: Label | None = None


class SetRetentionRequest(Request, kw_only=True):
    """``PUT .../retention``: the whole policy; an absent key means ``0`` / unset."""

    keep_last: Annotated[int, doc(minimum=0, maximum=2**31 - 1)] | None = None
    max_age: Duration | None = None


# --- answers ----------------------------------------------------------------------------------


class Snapshot(Closed, kw_only=True):
    """A CSI VolumeSnapshot of a context's PVC, with its observed status."""

    name: str
    context_name: str
    namespace: str
    revision: Annotated[str, doc("the context's current revision when it was taken")
                        ] | UnsetType = UNSET
    status: Annotated[str, one_of("creating", "ready", "failed")]
    snapshot_name: Annotated[str, doc("the VolumeSnapshot object's name")]
    snapshot_class: str | UnsetType = UNSET
    source_claim_name: str
    created_at: Stamp
    protected: Literal[True] | UnsetType = UNSET
    labels: Strings | UnsetType = UNSET
    error: str | UnsetType = UNSET


class SnapshotList(Closed, kw_only=True):
    items: Annotated[list[Snapshot], doc("by creation time, then name")]


class GarbageCollection(Closed, kw_only=True):
    """What a collection deleted and kept (or would, on a dry run)."""

    dry_run: bool
    deleted: list[Snapshot] | UnsetType = UNSET
    kept: list[Snapshot] | UnsetType = UNSET


class Capabilities(Closed, kw_only=True):
    """What the storage backend can do for a context, and why not."""

    snapshots: bool
    clones: bool
    restore: bool
    driver: str | UnsetType = UNSET
    snapshot_class: str | UnsetType = UNSET
    reason: str | UnsetType = UNSET

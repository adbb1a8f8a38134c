"""The snapshot_objects view: its rows, the projection's write interface and the reconciler's
read interface."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import Protocol

import msgspec

from context_service.domain.cluster import ContextSnapshot


class SnapshotObject(msgspec.Struct, frozen=True, kw_only=True):
    """One recorded snapshot's VolumeSnapshot: desired while its context lives and GC has not
    collected it (``collected`` False); to be deleted once collected, until that is observed."""

    desired: ContextSnapshot
    object_name: str
    status: str = "creating"  # as last recorded
    error: str = ""
    collected: bool = False

    @property
    def namespace(self) -> str:
        return self.desired.namespace


Rows = dict[uuid.UUID, dict[str, SnapshotObject]]  # stream -> snapshot name -> row


class SnapshotObjectsView(Protocol):
    def load(self, stream_ids: Iterable[uuid.UUID]) -> Rows:
        """The current rows of these context streams."""

    def replace(self, rows: Rows) -> None:
        """Make these streams' rows exactly the given ones."""


class SnapshotObjectsReads(Protocol):
    def all(self) -> list[SnapshotObject]:
        """Every row, ordered by namespace, context and snapshot name."""

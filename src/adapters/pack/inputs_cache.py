"""The folds of pack inputs (a namespace at a position, §7.3) kept in-process: a fold at a
position never changes, but a namespace's next pack input makes its folds stale for packs at
the head, so the projections runner's batches forget the folds of every namespace whose pack
inputs they carry, and the cache is bounded in estimated bytes. Other events (a pack's
release, a replay, a lifecycle step) change no fold and forget nothing: before, every pack's
own release event emptied its namespace's folds, and the next pack read them again."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

import msgspec

from context_service.domain.bounded import BoundedCache, Gauge, MiB
from context_service.domain.pack.model import NamespaceAt
from context_service.domain.stream import Recorded
from context_service.projections.pack_inputs.reads import PackInputReads
from context_service.projections.pack_inputs.view import PACK_INPUTS

LIMIT_BYTES = 64 * MiB
FOLDS_KEPT = 256
_encode = msgspec.json.Encoder().encode


def fold_bytes(_: tuple[str, int], fold: NamespaceAt) -> int:
    """An estimate of a fold's Python objects: three times its encoded length."""
    return 256 + 3 * len(_encode(fold))


class FoldCache:
    """``PackInputReads`` over ``reads`` (which keeps no fold itself), with each fold kept."""

    def __init__(self, reads: PackInputReads, limit_bytes: int = LIMIT_BYTES) -> None:
        self.reads = reads
        self._folds: BoundedCache[tuple[str, int], NamespaceAt] = BoundedCache(
            "pack_input_folds", limit_bytes, fold_bytes, max_entries=FOLDS_KEPT)

    def resolve(self, namespace: str, head: int | None,
                system_time: datetime | None) -> tuple[int, datetime]:
        return self.reads.resolve(namespace, head, system_time)

    def namespace_at(self, namespace: str, position: int) -> NamespaceAt:
        key = (namespace, position)
        found = self._folds.get(key)
        if found is not None:
            return found
        return self._folds.keep(key, self.reads.namespace_at(namespace, position))

    def gauges(self) -> list[Gauge]:
        return self._folds.gauges()

    # --- fed by the projection runner (a ``Listener``) ------------------------------------------

    def applied(self, batch: Sequence[Recorded]) -> None:
        """Forget the folds of the namespaces whose pack inputs the batch carries (a deleted
        context, a replaced index, a grant: any of them makes the folds stale for packs at the
        head)."""
        touched = {r.stream.namespace for r in batch if isinstance(r.event, PACK_INPUTS)}
        if touched:
            self._folds.retain(lambda key, _: key[0] not in touched)

    def reset(self) -> None:
        self._folds.clear()

"""pack_inputs: one row per pack-input event, so a pack finds its position by namespace and
time and folds its namespace without reading the whole log."""

from __future__ import annotations

from collections.abc import Sequence

from context_service.domain.stream import Recorded
from context_service.projections.pack_inputs.view import (
    PACK_INPUTS,
    PackInput,
    PackInputsView,
    slim,
)


class PackInputs:
    name = "pack_inputs"
    tables: tuple[str, ...] = ("pack_inputs",)

    def apply(self, view: PackInputsView, batch: Sequence[Recorded]) -> None:
        inputs = [PackInput(namespace=r.stream.namespace, position=r.position,
                            recorded_at=r.event.at, kind=r.stream.kind, key=r.stream.key,
                            event=slim(r.event))
                  for r in batch if isinstance(r.event, PACK_INPUTS)]
        if inputs:
            view.add(inputs)

"""What a projection is: a named, batch-at-a-time fold of recorded events into a view.

The runner hands each batch to ``apply`` together with a view bound to the batch's transaction;
view changes and the tracking position commit together (exactly once).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from context_service.domain.stream import Recorded


class Projection(Protocol):
    name: str
    tables: tuple[str, ...]  # emptied by a rebuild

    def apply(self, view: Any, batch: Sequence[Recorded]) -> None: ...

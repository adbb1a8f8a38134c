"""The catalog view's write interface: one document per context stream plus its grantees."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import Protocol

from context_service.domain.context.state import ContextState


class CatalogView(Protocol):
    def load(self, stream_ids: Iterable[uuid.UUID]) -> dict[uuid.UUID, tuple[ContextState, int]]:
        """Current documents and their creation positions."""

    def save(self, rows: list[tuple[uuid.UUID, ContextState, int]]) -> None:
        """Replace the documents (and grantees) of these streams."""

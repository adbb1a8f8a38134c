"""context_sets: every set's status and current version, per namespace (spec 12.5).

The document of a set is the ``ContextSetState`` the write model folds, as for the context
catalog. (Token counts of the set's items join it with the token counter of issue 11.)
"""

from __future__ import annotations

from collections.abc import Sequence

from context_service.domain.context_set.state import KIND, ContextSetState, evolve
from context_service.domain.stream import Recorded
from context_service.projections.base import fold_documents
from context_service.projections.context_sets.view import ContextSetView


class ContextSets:
    name: str = "context_sets"
    tables: tuple[str, ...] = ("context_sets",)

    def apply(self, view: ContextSetView, batch: Sequence[Recorded]) -> None:
        fold_documents(view, batch, KIND, ContextSetState, evolve)

"""What a plan reads: the documents of one collection at the answer's position and their
stated values, and the live citation check. Implemented in memory (``memory.py``) and over the
studied-fields table (an adapter)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple, Protocol

from context_service.domain.fields.plan import Plan
from context_service.domain.fields.values import Stated

Json = dict[str, Any]
Cite = Callable[[Stated], tuple[Json | None, str | None]]


class Page(NamedTuple):
    """The rows of a plan: how many documents matched, the first ``limit`` of them in answer
    order (none when the plan asks no fields) and, per requested field, their stated values."""

    matched: int
    documents: list[str]
    columns: dict[str, dict[str, Stated]]


class FieldInfo(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def type(self) -> str: ...

    @property
    def documents(self) -> int:
        """Documents stating it."""

    @property
    def currencies(self) -> Sequence[str]:
        """Money only, sorted."""


class FieldSource(Protocol):
    @property
    def documents(self) -> int:
        """Documents in the collection."""

    def catalog(self) -> Mapping[str, FieldInfo]:
        """Every field of the collection, by name."""

    def page(self, plan: Plan) -> Page:
        """The matched documents' count and the plan's rows (§10.4 Rows)."""

    def aggregates(self, plan: Plan, cite: Cite) -> Json:
        """The plan's ``aggregates`` object over every matched document, min/max cited."""


class Citations(Protocol):
    def cite(self, stated: Stated) -> tuple[dict[str, Any] | None, str | None]:
        """``(citation, None)`` or ``(None, uncitedReason)``, judged against the head (§10.1)."""

"""What a plan reads: the documents of one collection at the answer's position and their
stated values, and the live citation check. Implemented in memory (``memory.py``) and over the
studied-fields table (an adapter)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from context_service.domain.fields.plan import Filter
from context_service.domain.fields.values import Stated


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

    def matched(self, filters: Sequence[Filter]) -> list[str]:
        """The documents matching every filter (any order)."""

    def values(self, name: str, documents: Sequence[str]) -> dict[str, Stated]:
        """The stated values of ``name`` of those documents (those stating it)."""


class Citations(Protocol):
    def cite(self, stated: Stated) -> tuple[dict[str, Any] | None, str | None]:
        """``(citation, None)`` or ``(None, uncitedReason)``, judged against the head (§10.1)."""

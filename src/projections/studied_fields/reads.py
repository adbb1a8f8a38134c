"""Read port of the field routes: one read transaction over the studied-fields table."""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Protocol

from context_service.domain.fields.source import FieldSource


class Current(Protocol):
    @property
    def type(self) -> str: ...

    @property
    def publication(self) -> int:
        """The current usable index in the table; 0 when none."""


class FieldSession(Protocol):
    def current(self, namespace: str, name: str) -> Current | None:
        """The live memory or knowledge context ``name`` as the table knows it now."""

    def source(self, current: Current) -> FieldSource:
        """The fields of its current usable index."""


class FieldReads(Protocol):
    def session(self) -> AbstractContextManager[FieldSession]: ...

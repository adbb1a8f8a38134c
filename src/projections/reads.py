"""Read port of the context views: what HTTP reads, implemented over PostgreSQL by an adapter."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from context_service.domain.context.events import CloneSource, Revision
from context_service.domain.context.state import ContextState
from context_service.domain.events import Subject


@dataclass(frozen=True, slots=True)
class AuditEntry:
    position: int
    time: datetime
    action: str
    subject: Subject
    target: Subject | None
    seq: int = 0  # order among the entries of one (adoption) event


@dataclass(frozen=True, slots=True)
class CatalogEntry:
    state: ContextState
    created_position: int


class ContextReads(Protocol):
    def get(self, namespace: str, name: str) -> CatalogEntry | None: ...

    def list(self, namespace: str, subject: Subject | None) -> Sequence[ContextState]:
        """Live contexts of the namespace on which ``subject`` holds any grant (None: all)."""

    def clones_of(self, namespace: str, context: str) -> Sequence[CloneSource]:
        """Clone provenance of the namespace's live contexts cloned from ``context``."""

    def revisions(self, namespace: str, name: str, since: int) -> Sequence[Revision]: ...

    def audit(self, namespace: str, name: str, since: int, after: tuple[int, int], limit: int,
              through: tuple[int, int] | None = None) -> Sequence[AuditEntry]:
        """At most ``limit`` entries of the generation starting at ``since``, oldest first, after
        (position, seq) ``after`` and up to ``through`` inclusive (no bound: None). Always a
        page: a log read whole would cost memory in proportion to the context's history."""

    def audit_last(self, namespace: str, name: str, since: int) -> tuple[int, int] | None:
        """The (position, seq) of the newest entry of the generation starting at ``since``
        (None: it has none): where a reading of the whole history as of now ends."""


class Consistency(Protocol):
    def wait(self, views: Sequence[str], timeout: float, head: int | None = None) -> bool:
        """Block until ``views`` have reached the log head as of now (or ``head``, a head the
        caller read just before); False on time-out."""

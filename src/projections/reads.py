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
class RevisionEntry:
    """A revision of the history and where it stands in it (its event's position, its order
    among the revisions of that one event): the key a reading pages by."""

    position: int
    seq: int
    revision: Revision


@dataclass(frozen=True, slots=True)
class CatalogEntry:
    state: ContextState
    created_position: int


class ContextReads(Protocol):
    def get(self, namespace: str, name: str, history: bool = True) -> CatalogEntry | None:
        """The live context's entry; without ``history``, its state's ``revisions`` empty: a
        check of who may do what then costs memory for the context, not for every revision it
        ever published (20,000 of them: 24 MiB at its peak, decoded)."""

    def list(self, namespace: str, subject: Subject | None) -> Sequence[ContextState]:
        """Live contexts of the namespace on which ``subject`` holds any grant (None: all)."""

    def clones_of(self, namespace: str, context: str) -> Sequence[CloneSource]:
        """Clone provenance of the namespace's live contexts cloned from ``context``."""

    def revisions(self, namespace: str, name: str, since: int, after: tuple[int, int],
                  limit: int, through: tuple[int, int] | None = None,
                  ) -> Sequence[RevisionEntry]:
        """At most ``limit`` revisions of the generation starting at ``since``, in publication
        order, after (position, seq) ``after`` and up to ``through`` inclusive (no bound:
        None). Always a page, as ``audit``."""

    def revisions_last(self, namespace: str, name: str, since: int) -> tuple[int, int] | None:
        """The (position, seq) of the newest revision of the generation starting at ``since``
        (None: it has none)."""

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

"""The pure snapshot garbage-collection decision (spec 6.6, retention and GC).

A snapshot is kept when any keep rule matches: it is protected, among the ``keepLast`` newest,
not older than ``maxAge``, or referenced by a live clone. Without a policy nothing is deleted.
Works over anything shaped like a recorded snapshot, so it needs nothing but the standard library.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Generic, Protocol, TypeVar

from context_service.domain.context.events import CloneSource

_MICROSECOND = timedelta(microseconds=1)


class Collectable(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def created_at(self) -> datetime: ...

    @property
    def protected(self) -> bool: ...

    @property
    def revision(self) -> str: ...


S = TypeVar("S", bound=Collectable)


@dataclass(frozen=True, slots=True)
class Plan(Generic[S]):
    """Both lists oldest first: ordered by (createdAt, name)."""

    kept: tuple[S, ...]
    deleted: tuple[S, ...]


def oldest_first(snapshots: Sequence[S]) -> list[S]:
    return sorted(snapshots, key=lambda s: (s.created_at, s.name))


def referenced(snapshot: Collectable, clones: Sequence[CloneSource]) -> bool:
    """A live clone names this snapshot, or carries its (non-empty) revision."""
    return any(c.snapshot == snapshot.name
               or (snapshot.revision != "" and c.revision == snapshot.revision) for c in clones)


def age_ns(created_at: datetime, now: datetime) -> int:
    """Nanoseconds from ``created_at`` to ``now`` (negative for a future time), exactly."""
    return ((now - created_at) // _MICROSECOND) * 1000


def plan(snapshots: Sequence[S], keep_last: int, max_age_ns: int | None,
         clones: Sequence[CloneSource], now: datetime) -> Plan[S]:
    """Split a context's snapshots into kept and deleted.

    ``max_age_ns`` None (or 0) means no age rule; ``clones`` are the clone provenances of the live
    contexts of the namespace cloned from this context.
    """
    ordered = oldest_first(snapshots)
    max_age = max_age_ns or None
    if keep_last <= 0 and max_age is None:
        return Plan(tuple(ordered), ())
    first_newest = max(len(ordered) - keep_last, 0) if keep_last > 0 else len(ordered)
    newest = {s.name for s in ordered[first_newest:]}
    kept: list[S] = []
    deleted: list[S] = []
    for snapshot in ordered:
        young = max_age is not None and age_ns(snapshot.created_at, now) <= max_age
        keep = (snapshot.protected or snapshot.name in newest or young
                or referenced(snapshot, clones))
        (kept if keep else deleted).append(snapshot)
    return Plan(tuple(kept), tuple(deleted))

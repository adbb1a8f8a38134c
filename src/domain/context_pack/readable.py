"""Which collections a credential may read now (spec §3.4 rules 1-3) and which context set a
pack request works in (§3.5): pure rules over the views' current state.

Rule 1 (the creator's role holds ``context:read``) is the bearer pipeline's; rule 4 (the active
set's collections) belongs to the pack's scope, which is judged at the pack's position.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from context_service.domain.context.state import ContextState
from context_service.domain.context_set.state import ContextSetState
from context_service.domain.errors import ContextSetNotFoundError, DomainError
from context_service.domain.events import Subject
from context_service.domain.values import quote

COLLECTION_TYPES = ("memory", "knowledge")


class BoundToOtherSetError(DomainError):
    """A bound credential named another set in a pack request (403 ``FORBIDDEN``)."""

    def __init__(self, bound: str) -> None:
        super().__init__(f"agent credential is bound to context set {quote(bound)}")


def readable_collections(creator: Subject, contexts: Iterable[ContextState], bound: str,
                         bound_set: ContextSetState | None) -> frozenset[str]:
    """Names of the live memory/knowledge contexts on which ``creator`` holds ``read`` now,
    limited to the bound set's current collections (the last version's when it is archived;
    none at all when a bound set cannot be found)."""
    names = {c.name for c in contexts
             if c.live and c.type in COLLECTION_TYPES and "read" in c.permissions_of(creator)}
    if bound:
        limit = set(bound_set.collections) if bound_set is not None and bound_set.exists \
            else set()
        names &= limit
    return frozenset(names)


def active_set(bound: str, requested: str | None,
               get: Callable[[str], ContextSetState | None]) -> ContextSetState | None:
    """The active set of a pack request (§3.5, §7.2 step 7): the named set, else the bound set
    while it is active, else none. A bound credential naming another set is refused (403); a
    named set unknown or archived — the bound one included — answers 404."""
    if requested is not None:
        if bound and requested != bound:
            raise BoundToOtherSetError(bound)
        found = get(requested)
        if found is None or not found.active:
            raise ContextSetNotFoundError()
        return found
    if bound:
        found = get(bound)
        return found if found is not None and found.active else None
    return None

"""Which collections a credential may read now (spec §3.4 rules 1-3) and which context set a
pack request works in (§3.5): pure rules over the views' current state.

Rule 1 (the creator's role holds ``context:read``) is the bearer pipeline's; rule 4 (the active
set's collections) belongs to the pack's scope, which is judged at the pack's position.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import msgspec

from context_service.domain.context.state import ContextState
from context_service.domain.context_set.state import ContextSetState
from context_service.domain.errors import ContextSetNotFoundError, DomainError
from context_service.domain.events import ADMIN, Subject
from context_service.domain.values import quote

COLLECTION_TYPES = ("memory", "knowledge")


class BoundToOtherSetError(DomainError):
    """A bound credential named another set in a pack request (403 ``FORBIDDEN``)."""

    def __init__(self, bound: str) -> None:
        super().__init__(f"agent credential is bound to context set {quote(bound)}")


class Readable(msgspec.Struct, frozen=True):
    """The collections readable now, asked with ``name in readable``. ``names`` None means any
    name (the bootstrap administrator, who reads every context, deleted ones included, §3.4
    rule 2) except the ``refused`` ones (live collections not admitted to agents, rule 5);
    ``limit`` is a bound credential's set (§3.4 rule 3), None when unbound."""

    names: frozenset[str] | None
    limit: frozenset[str] | None = None
    refused: frozenset[str] = frozenset()
    live: frozenset[str] = frozenset()  # the live collections now (the administrator's only)

    def admitted_now(self) -> frozenset[str]:
        """The collections admitted to agents now among those this holds (§3.4 rule 5): what
        lived at a pack's point when that point is now."""
        return self.names if self.names is not None else self.live - self.refused

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, str):
            return False
        if self.limit is not None and name not in self.limit:
            return False
        if self.names is None:
            return name not in self.refused
        return name in self.names


def readable_collections(creator: Subject, contexts: Iterable[ContextState], bound: str,
                         bound_set: ContextSetState | None,
                         refused: frozenset[str] = frozenset()) -> Readable:
    """The live memory/knowledge contexts (among those admitted to agents) on which ``creator``
    holds ``read`` now (any context but the ``refused`` ones for the bootstrap administrator),
    limited to the bound set's current collections (the last version's when it is archived;
    none at all when a bound set cannot be found)."""
    limit: frozenset[str] | None = None
    if bound:
        limit = frozenset(bound_set.collections) if bound_set is not None and bound_set.exists \
            else frozenset()
    collections = [c for c in contexts if c.live and c.type in COLLECTION_TYPES]
    if creator == ADMIN:
        return Readable(None, limit, refused, frozenset(c.name for c in collections))
    names = frozenset(c.name for c in collections if "read" in c.permissions_of(creator))
    return Readable(names, limit)


def named_readable(readable: Readable, at_p: Callable[[str], bool],
                   admitted_at_p: frozenset[str]) -> Callable[[str], bool]:
    """Whether a collection a request names is readable now (§3.4, §7.2 step 9). The
    administrator reads every collection, deleted ones included (``at_p``: a memory or knowledge
    context at the pack's position, for time travel), but not every name: one that is neither a
    live collection now nor a collection at P answers like an absent one, as for anyone. Rule 5
    holds at P too, for every credential: a collection at P is read only when the generation
    that lived then is admitted (``admitted_at_p``), or a non-member's collection, deleted
    since, or whose name a member took again, would reach agents by time travel (readable now
    by its name, the member's collection)."""
    if readable.names is not None:
        return lambda name: name in readable and (not at_p(name) or name in admitted_at_p)
    return lambda name: name in readable and (
        name in admitted_at_p if at_p(name) else name in readable.live)


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

"""Which context sets a library request reads (spec 3.5, 9.1): a bound credential sees only its
own set, and only while it is active; an unbound one sees every active set of its workspace.
A set that is not visible answers exactly like one that does not exist."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from context_service.domain.context_set.state import ContextSetState
from context_service.domain.errors import ContextSetNotFoundError

Lookup = Callable[[str], ContextSetState | None]
Listing = Callable[[], Sequence[ContextSetState]]


def named_set(bound: str, requested: str, get: Lookup) -> ContextSetState:
    """The set a request names: the bound set only, for a bound credential; active, always."""
    if bound and requested != bound:
        raise ContextSetNotFoundError()
    found = get(requested)
    if found is None or not found.active:
        raise ContextSetNotFoundError()
    return found


def searched_sets(bound: str, requested: str | None, get: Lookup,
                  listing: Listing) -> list[ContextSetState]:
    """The sets ``definitions/lookup`` and ``verified-answers/match`` search."""
    if requested is not None:
        return [named_set(bound, requested, get)]
    if bound:
        return [named_set(bound, bound, get)]
    return [s for s in listing() if s.active]


def visible_sets(bound: str, get: Lookup, listing: Listing) -> list[ContextSetState]:
    """What ``context-sets/list`` covers: none for a bound credential whose set is archived."""
    if bound:
        found = get(bound)
        return [found] if found is not None and found.active else []
    return [s for s in listing() if s.active]

"""Which collections a pack reads (§7.2 step 9, §7.4): the scope of the active set at P, the
candidate collections, the ones reported ``index_unavailable``, and the set version in force."""

from __future__ import annotations

from collections.abc import Callable

import msgspec

from context_service.domain.context_set.state import ContextSetState
from context_service.domain.pack.items import Missing
from context_service.domain.pack.model import CollectionAt, NamespaceAt
from context_service.domain.pack.request import PackRequest

PACKABLE_TYPES = ("memory", "knowledge")

Readable = Callable[[str], bool]
"""Whether a collection is readable now by the credential (§3.4 rules 1-3: the creator's access
now, the bound set's current collections)."""


class PackScope(msgspec.Struct, frozen=True, kw_only=True):
    """What §7.4 resolves before retrieval.

    ``not_found`` is the first entry of ``filters.collectionIds`` (request order) that is not
    readable now within the scope: the route answers ``404 collection "<c>" not found`` and
    nothing else here is meaningful. ``usable`` are the candidate collections with a usable
    index, by name; ``missing`` the ``index_unavailable`` entries (by collection name) and, when
    the active set had no active version at P, its ``not_in_force`` entry. ``set_state`` is the
    set's version in force at P (None: no active set, or not in force), ``set_version`` its
    version (0 when none)."""

    not_found: str = ""
    usable: tuple[CollectionAt, ...] = ()
    missing: tuple[Missing, ...] = ()
    set_state: ContextSetState | None = None
    set_version: int = 0


def pack_scope(ns: NamespaceAt, request: PackRequest, active_set: ContextSetState | None,
               readable_now: Readable) -> PackScope:
    """Resolve the scope of a pack at ``ns.position``.

    ``active_set`` is the active set's *current* state (§3.5: the route has checked it is
    active); its version at P comes from ``ns.sets``. Without an active set the scope is every
    collection."""
    at_p = ns.sets.get(active_set.id) if active_set is not None else None
    in_force = at_p if at_p is not None and at_p.active else None
    missing: list[Missing] = []
    if active_set is None:
        scope: frozenset[str] | None = None
    elif in_force is not None:
        scope = frozenset(in_force.collections)
    else:
        scope = frozenset(active_set.collections)
    for name in request.collection_ids:
        if (scope is not None and name not in scope) or not readable_now(name):
            return PackScope(not_found=name)
    named = frozenset(request.collection_ids)
    usable: list[CollectionAt] = []
    unavailable: set[str] = set()
    for name in sorted(ns.collections):
        c = ns.collections[name]
        if scope is not None and name not in scope:
            continue
        if named and name not in named:
            continue
        if not (c.live and c.type in PACKABLE_TYPES) or not readable_now(name):
            continue
        if c.usable:
            usable.append(c)
        else:
            unavailable.add(name)
    for name in named:
        c_at = ns.collections.get(name)
        if c_at is None or not (c_at.live and c_at.type in PACKABLE_TYPES):
            unavailable.add(name)  # readable now (checked above) but not packable at P
    missing.extend(Missing(kind="collection", collection_id=name, reason="index_unavailable")
                   for name in sorted(unavailable))
    if active_set is not None and in_force is None:
        missing.append(Missing(kind="context_set", id=active_set.id, reason="not_in_force"))
    return PackScope(usable=tuple(usable), missing=tuple(missing), set_state=in_force,
                     set_version=in_force.version if in_force is not None else 0)

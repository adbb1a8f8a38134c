"""Which collections of a workspace may reach its agents (agent-context-api.md §3.4 rule 5): one
created by a subject holding a role in the workspace at the time, or one an owner or admin has
admitted by naming it in a version of an active context set recorded after its creation.

Pure: the read model supplies each collection's origin and the sets' versions in force.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import msgspec

from context_service.domain.events import ADMIN, Subject


class Origin(msgspec.Struct, frozen=True):
    """The creation of a collection's latest generation: where the log recorded it, whether
    its creator held a role in the workspace then, and where it was deleted (None while it
    lives): the bootstrap administrator's time travel reads deleted collections, and rule 5
    holds for them too."""

    position: int
    by_member: bool
    deleted: int | None = None


class SetInForce(msgspec.Struct, frozen=True):
    """The version in force of an active context set: where it was recorded, what it names."""

    position: int
    collections: tuple[str, ...]


def created_by_member(creator: Subject | None, holds_role: bool) -> bool:
    """Whether a creation counts as a member's: the creator held a role in the workspace (any
    role), or is the bootstrap administrator, who acts as owner of every workspace. An
    adopted context has no known creator (None) and never counts."""
    return creator is not None and (creator == ADMIN or holds_role)


def admitted(name: str, origin: Origin | None, sets: Iterable[SetInForce]) -> bool:
    """Whether collection ``name`` may reach agents. Without an origin (none recorded) it may
    not. A set version recorded before the creation names another generation (or a name not
    yet taken) and admits nothing."""
    if origin is None:
        return False
    if origin.by_member:
        return True
    return any(s.position > origin.position and name in s.collections for s in sets)


def admitted_names(origins: Mapping[str, Origin | None],
                   sets: Iterable[SetInForce]) -> frozenset[str]:
    """The names among ``origins`` that ``admitted`` accepts (one pass over the sets)."""
    latest: dict[str, int] = {}  # per name, the latest version in force naming it
    for s in sets:
        for name in s.collections:
            latest[name] = max(latest.get(name, 0), s.position)
    return frozenset(name for name, origin in origins.items() if origin is not None and (
        origin.by_member or latest.get(name, 0) > origin.position))


def admitted_at(name: str, origin: Origin | None, sets: Iterable[SetInForce],
                position: int) -> bool:
    """Whether the generation of collection ``name`` that lived at log ``position`` may reach
    agents (a pack or field query at an earlier point: the administrator reads collections
    deleted since, anyone a name a member took again since). ``admitted`` for that
    generation, with the set versions recorded while it lived: one recorded after its deletion
    names another one. Only the latest generation of a name is known: when it was created after
    ``position``, the one that lived then is not, and is refused."""
    if origin is None or origin.position > position:
        return False
    if origin.deleted is None:
        return admitted(name, origin, sets)
    return origin.deleted > position and admitted(
        name, origin, [s for s in sets if s.position < origin.deleted])

"""collection_admission: folds membership, context creations and context-set versions in log
order, so each creation is judged against the membership the log held when it was recorded.

Its own record of members (not the workspace_members view, which another projection advances)
keeps the view a function of the log alone: rebuilt from position zero it is the same.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from context_service.domain.context.events import ContextAdopted, ContextCreated, ContextDeleted
from context_service.domain.context_set.events import (
    ContextSetArchived,
    ContextSetCreated,
    ContextSetReplaced,
)
from context_service.domain.stream import Recorded
from context_service.domain.workspace.admission import Origin, SetInForce, created_by_member
from context_service.domain.workspace.events import WorkspaceMemberRemoved, WorkspaceMemberSet
from context_service.projections.collection_admission.view import (
    AdmissionChanges,
    AdmissionView,
    MemberKey,
    NameKey,
)

EVENTS = (WorkspaceMemberSet, WorkspaceMemberRemoved, ContextCreated, ContextAdopted,
          ContextDeleted, ContextSetCreated, ContextSetReplaced, ContextSetArchived)


class CollectionAdmission:
    name: str = "collection_admission"
    tables: tuple[str, ...] = ("collection_admission_members", "collection_origins",
                               "collection_admission_sets")

    def apply(self, view: AdmissionView, batch: Sequence[Recorded]) -> None:
        relevant = [r for r in batch if isinstance(r.event, EVENTS)]
        if not relevant:
            return
        creators = {(r.stream.namespace, r.event.owner.key) for r in relevant
                    if isinstance(r.event, ContextCreated)}
        before = view.members(creators) if creators else set()
        deleted = {(r.stream.namespace, r.stream.key) for r in relevant
                   if isinstance(r.event, ContextDeleted)}
        stored = view.origins(deleted) if deleted else {}
        changes = AdmissionChanges()
        for recorded in relevant:
            fold(changes, before, stored, recorded)
        view.save(changes)


def fold(changes: AdmissionChanges, before: set[MemberKey],
         stored: dict[NameKey, Origin], recorded: Recorded) -> None:
    """Apply one event to the batch's changes (``before``: creators holding a role when the
    batch began; ``stored``: the origins of the batch's deleted collections when it began)."""
    namespace, event = recorded.stream.namespace, recorded.event
    match event:
        case WorkspaceMemberSet():
            changes.members[(namespace, event.subject.key)] = True
        case WorkspaceMemberRemoved():
            changes.members[(namespace, event.subject.key)] = False
        case ContextCreated():
            key = (namespace, event.owner.key)
            holds = changes.members.get(key, key in before)
            changes.origins[(namespace, recorded.stream.key)] = Origin(
                recorded.position, created_by_member(event.owner, holds))
        case ContextAdopted():  # imported from the cluster: its creator is unknown
            changes.origins[(namespace, recorded.stream.key)] = Origin(
                recorded.position, created_by_member(None, False))
        case ContextDeleted():  # kept, with where it ended: time travel still reads it
            key = (namespace, recorded.stream.key)
            origin = changes.origins.get(key) or stored.get(key)
            if origin is not None:
                changes.origins[key] = msgspec.structs.replace(origin, deleted=recorded.position)
        case ContextSetCreated() | ContextSetReplaced():
            changes.sets[(namespace, event.id)] = SetInForce(recorded.position,
                                                             event.collections)
        case ContextSetArchived():
            changes.sets[(namespace, event.id)] = None

"""The collection_admission view's write interface: the changes one batch makes."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Protocol

from context_service.domain.workspace.admission import Origin, SetInForce

MemberKey = tuple[str, str]  # (workspace, subject ``kind:name``)
NameKey = tuple[str, str]  # (workspace, collection name or set id)


@dataclass
class AdmissionChanges:
    """The last change of each key in a batch (log order): a member who holds a role (True) or
    no longer does (False); a collection's origin (its deletion noted in it); a set's version
    in force, or None once archived."""

    members: dict[MemberKey, bool] = field(default_factory=dict)
    origins: dict[NameKey, Origin] = field(default_factory=dict)
    sets: dict[NameKey, SetInForce | None] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.members or self.origins or self.sets)


class AdmissionView(Protocol):
    def members(self, keys: Collection[MemberKey]) -> set[MemberKey]:
        """Which of ``keys`` hold a role in their workspace, as of the view."""

    def origins(self, keys: Collection[NameKey]) -> dict[NameKey, Origin]:
        """The recorded origins of ``keys`` (those the view holds), as of the view."""

    def save(self, changes: AdmissionChanges) -> None: ...

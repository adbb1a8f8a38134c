"""The in-process directory the agent pipeline reads on every request: credentials by id and
roles by (workspace, subject).

While this process's projection runner maintains the access views, the directory is fed by that
runner after each committed batch and answers from memory (no database round trip); an entry
missing from memory is loaded from the view once. A load that overlapped a batch is not kept
(it may predate the batch). When the views are maintained by another process, every lookup reads
the views, so a revocation is never trusted to a cache longer than read-your-writes allows.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Protocol

from context_service.domain.agent_credentials.state import Credential
from context_service.domain.events import Subject
from context_service.domain.stream import Recorded
from context_service.projections.agent_access.projection import (
    credential_ids,
    fold_credentials,
    member_changes,
)

_ABSENT = object()


class AccessReads(Protocol):
    def credential(self, credential_id: str) -> Credential | None: ...

    def role(self, namespace: str, subject: Subject) -> str | None: ...


class AccessDirectory:
    def __init__(self, reads: AccessReads, live: Callable[[], bool],
                 size: int = 65536) -> None:
        self.reads = reads
        self.live = live  # True while the local runner keeps the views (and this) current
        self._size = size
        self._lock = threading.Lock()
        self._generation = 0
        self._credentials: OrderedDict[str, Credential | None] = OrderedDict()
        self._roles: OrderedDict[tuple[str, str], str | None] = OrderedDict()

    # --- lookups ------------------------------------------------------------------------------

    def credential(self, credential_id: str) -> Credential | None:
        if not self.live():
            return self.reads.credential(credential_id)
        with self._lock:
            found = self._credentials.get(credential_id, _ABSENT)
            generation = self._generation
        if found is not _ABSENT:
            return found  # type: ignore[return-value]
        loaded = self.reads.credential(credential_id)
        if loaded is not None:  # unknown ids are not remembered (no memory for guesses)
            self._keep(self._credentials, credential_id, loaded, generation)
        return loaded

    def role(self, namespace: str, subject: Subject) -> str | None:
        if not self.live():
            return self.reads.role(namespace, subject)
        key = (namespace, subject.key)
        with self._lock:
            found = self._roles.get(key, _ABSENT)
            generation = self._generation
        if found is not _ABSENT:
            return found  # type: ignore[return-value]
        loaded = self.reads.role(namespace, subject)
        self._keep(self._roles, key, loaded, generation)
        return loaded

    def _keep(self, table: OrderedDict, key: object, value: object,  # type: ignore[type-arg]
              generation: int) -> None:
        with self._lock:
            if generation != self._generation:
                return
            table[key] = value
            while len(table) > self._size:
                table.popitem(last=False)

    # --- fed by the projection runner -----------------------------------------------------------

    def reset(self) -> None:
        """Forget everything (the runner re-read its positions: others may have moved them)."""
        with self._lock:
            self._generation += 1
            self._credentials.clear()
            self._roles.clear()

    def applied(self, batch: Sequence[Recorded]) -> None:
        """A batch the runner committed: apply what it says about credentials and roles."""
        changes = member_changes(batch)
        ids = credential_ids(batch)
        if not changes and not ids:
            return
        with self._lock:
            self._generation += 1  # a load that overlapped this batch is not kept
            known = {k: c for k in ids if (c := self._credentials.get(k)) is not None}
            touched = fold_credentials(batch, known)
            for namespace, subject, role, _ in changes:
                self._roles[(namespace, subject.key)] = role
            for key, credential in touched.items():
                self._credentials[key] = credential

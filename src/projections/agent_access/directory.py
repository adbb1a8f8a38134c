"""The in-process directory the agent pipeline reads on every request: credentials by id and
roles by (workspace, subject).

While this process's projection runner maintains the access views, the directory is fed by that
runner after each committed batch and answers from memory (no database round trip); an entry
missing from memory is loaded from the view once. A load that overlapped a batch is not kept
(it may predate the batch). It also knows every credential id there is (read once after each
reset, then fed by the batches), so an unknown id is answered without the database. When the
views are maintained by another process, every lookup reads the views, so a revocation is never
trusted to a cache longer than read-your-writes allows.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
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
log = logging.getLogger(__name__)
Gauge = tuple[str, str, dict[str, str], float]


class AccessReads(Protocol):
    def credential(self, credential_id: str) -> Credential | None: ...

    def role(self, namespace: str, subject: Subject) -> str | None: ...


def _id_key(credential_id: str) -> int | None:
    """A credential id (16 hex digits) as a number: half the memory of the string."""
    if len(credential_id) != 16:
        return None
    try:
        return int(credential_id, 16)
    except ValueError:
        return None


class AccessDirectory:
    """``ids``: every credential id the view holds (None: misses always read the view);
    ``id_capacity``: past that many ids, misses read the view again until the next reset."""

    def __init__(self, reads: AccessReads, live: Callable[[], bool],
                 size: int = 65536, ids: Callable[[], Iterable[str]] | None = None,
                 id_capacity: int = 262144) -> None:
        self.reads = reads
        self.live = live  # True while the local runner keeps the views (and this) current
        self._size = size
        self._lock = threading.Lock()
        self._generation = 0
        self._credentials: OrderedDict[str, Credential | None] = OrderedDict()
        self._roles: OrderedDict[tuple[str, str], str | None] = OrderedDict()
        self._list_ids = ids
        self._id_capacity = id_capacity
        self._epoch = 0  # moves on reset only: ids are never removed from the view otherwise
        self._ids: set[int] = set()  # fed by every batch since the reset, plus one full read
        self._ids_state = "partial"  # partial -> loading -> complete, or too-many

    # --- lookups ------------------------------------------------------------------------------

    def credential(self, credential_id: str) -> Credential | None:
        if not self.live():
            return self.reads.credential(credential_id)
        with self._lock:
            found = self._credentials.get(credential_id, _ABSENT)
            generation = self._generation
        if found is not _ABSENT:
            return found  # type: ignore[return-value]
        if not self._may_exist(credential_id):
            return None  # unknown: no database query, whatever the caller guesses
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

    def _may_exist(self, credential_id: str) -> bool:
        """False only when the id is surely unknown: the full id list was read in this epoch
        (once, by one caller) and no batch since has named the id."""
        key = _id_key(credential_id)
        with self._lock:
            state, epoch = self._ids_state, self._epoch
            if state == "complete":
                return key in self._ids
            if state != "partial" or self._list_ids is None:
                return True
            self._ids_state = "loading"  # the others read the view meanwhile
        listed = self._read_ids()
        with self._lock:
            if epoch != self._epoch:  # reset meanwhile: the read may predate what it forgot
                return True
            if self._ids_state == "too-many":  # the batches alone passed the capacity
                return True
            if listed is None:
                self._ids_state = "partial"  # try again on a later miss
                return True
            self._ids |= listed
            self._ids_state = "complete"
            self._bound_ids()
            return self._ids_state != "complete" or key in self._ids

    def _read_ids(self) -> set[int] | None:
        assert self._list_ids is not None
        try:
            listed = {k for i in self._list_ids() if (k := _id_key(i)) is not None}
        except Exception:  # the database is away: the lookup reads the view and fails there
            log.warning("could not read the credential ids", exc_info=True)
            return None
        return listed

    def _bound_ids(self) -> None:
        """Past the capacity, stop keeping ids until the next reset (misses read the view)."""
        if len(self._ids) > self._id_capacity:
            self._ids = set()
            self._ids_state = "too-many"

    def _keep(self, table: OrderedDict, key: object, value: object,  # type: ignore[type-arg]
              generation: int) -> None:
        with self._lock:
            if generation != self._generation:
                return
            table[key] = value
            self._trim(table)

    def _trim(self, table: OrderedDict) -> None:  # type: ignore[type-arg]
        while len(table) > self._size:
            table.popitem(last=False)

    def gauges(self) -> list[Gauge]:
        with self._lock:
            held = (len(self._credentials), len(self._roles), len(self._ids))
            complete = self._ids_state == "complete"
        return [
            ("cs_access_directory_credentials", "Credentials the access directory holds.", {},
             held[0]),
            ("cs_access_directory_roles", "Workspace roles the access directory holds.", {},
             held[1]),
            ("cs_access_directory_credential_ids", "Credential ids the access directory knows.",
             {}, held[2]),
            ("cs_access_directory_ids_complete", "1 when every credential id is known, so an"
             " unknown id is answered without the database, else 0.", {}, 1 if complete else 0)]

    # --- fed by the projection runner -----------------------------------------------------------

    def reset(self) -> None:
        """Forget everything (the runner re-read its positions: others may have moved them)."""
        with self._lock:
            self._generation += 1
            self._epoch += 1
            self._credentials.clear()
            self._roles.clear()
            self._ids = set()
            self._ids_state = "partial"

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
            self._trim(self._roles)
            self._trim(self._credentials)
            if self._ids_state != "too-many":
                self._ids.update(k for i in ids if (k := _id_key(i)) is not None)
                self._bound_ids()

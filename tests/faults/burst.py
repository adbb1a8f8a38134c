"""A write burst from many clients with every answer recorded, and the log checked against it.

Each write carries a marker of its own (a context name, a grantee, a revision id), so the log
can be searched for it afterwards: a write answered 2xx must be there exactly once, one answered
with an error must not be, and one whose connection died without an answer may be either.
"""

from __future__ import annotations

import hashlib
import random
import threading
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import httpx

from context_service.adapters.eventstore.store import EventStore
from context_service.domain.context.events import (
    AccessGranted,
    ContextCreated,
    ContextDeleted,
    RevisionPublished,
)

NAMESPACE = "faults"
SUBJECT = {"X-Context-Subject": "user:faults"}
CONTEXTS = f"/v1/namespaces/{NAMESPACE}/contexts"


def context_body(name: str) -> dict[str, Any]:
    return {"name": name, "namespace": NAMESPACE, "type": "memory",
            "storage": {"backend": "pvc", "size": "1Gi", "accessMode": "ReadWriteOnce"}}


def revision_id(marker: str) -> str:
    return hashlib.sha256(marker.encode()).hexdigest()


@dataclass
class Write:
    kind: str  # create | grant | revision | delete
    context: str
    marker: str
    status: int | None = None  # None: the connection died without an answer
    position: int = 0

    @property
    def acknowledged(self) -> bool:
        return self.status is not None and 200 <= self.status < 300

    @property
    def refused(self) -> bool:
        return self.status is not None and self.status >= 400


@dataclass
class Burst:
    """``clients`` threads writing until stopped or their connection dies."""

    url: str
    tag: str
    shared: list[str]
    clients: int = 16
    seed: int = 0
    writes: list[Write] = field(default_factory=list)
    reads: list[tuple[str, int | None, str]] = field(default_factory=list)
    read_every: int = 0  # a read-your-write check after every n-th acknowledged create
    _stop: threading.Event = field(default_factory=threading.Event)
    _threads: list[threading.Thread] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def start(self) -> Burst:
        for client in range(self.clients):
            thread = threading.Thread(target=self._client, args=(client,), daemon=True)
            thread.start()
            self._threads.append(thread)
        return self

    def stop(self) -> None:
        self._stop.set()
        self.join()

    def join(self, timeout: float = 60) -> None:
        for thread in self._threads:
            thread.join(timeout)
            assert not thread.is_alive(), "a burst client hung"

    def acknowledged(self) -> int:
        with self._lock:
            return sum(w.acknowledged for w in self.writes)

    def _client(self, client: int) -> None:
        rng = random.Random(f"{self.seed}/{self.tag}/{client}")
        own: list[str] = []
        with httpx.Client(base_url=self.url, timeout=30, headers=SUBJECT) as http:
            for i in range(100_000):
                if self._stop.is_set():
                    return
                marker = f"{self.tag}x{client}x{i}"
                write = self._next(rng, marker, own)
                try:
                    response = self._send(http, write)
                except httpx.HTTPError:
                    with self._lock:
                        self.writes.append(write)  # no answer: unknown
                    if self._stop.wait(0.05):
                        return
                    continue
                write.status = response.status_code
                write.position = int(response.headers.get("X-Context-Position", "0"))
                with self._lock:
                    self.writes.append(write)
                if write.kind == "create" and write.acknowledged:
                    own.append(write.context)
                    if self.read_every and len(own) % self.read_every == 0:
                        self._read_back(http, write.context)

    def _read_back(self, http: httpx.Client, name: str) -> None:
        try:
            status: int | None = http.get(f"{CONTEXTS}/{name}").status_code
        except httpx.HTTPError:
            status = None
        with self._lock:
            self.reads.append((name, status, "after its acknowledged create"))

    def _next(self, rng: random.Random, marker: str, own: list[str]) -> Write:
        roll = rng.random()
        if roll < 0.4 or not own:
            return Write("create", f"c{marker}", f"c{marker}")
        if roll < 0.65:
            target = rng.choice(own + self.shared)
            return Write("grant", target, f"g{marker}")
        if roll < 0.9:
            return Write("revision", rng.choice(self.shared), revision_id(marker))
        return Write("delete", own.pop(rng.randrange(len(own))), "")

    @staticmethod
    def _send(http: httpx.Client, write: Write) -> httpx.Response:
        path = f"{CONTEXTS}/{write.context}"
        if write.kind == "create":
            return http.post("/v1/contexts", json=context_body(write.context))
        if write.kind == "grant":
            return http.put(path + "/grants", json={
                "subject": {"kind": "agent", "name": write.marker}, "permissions": ["read"]})
        if write.kind == "revision":
            return http.post(path + "/revisions", json={
                "id": write.marker, "createdAt": "2026-05-01T10:11:12Z", "operation": "sync"})
        return http.delete(path)


def log_markers(store: EventStore) -> Counter[tuple[str, str]]:
    """(kind, marker) of every event of the log a burst write can have produced."""
    found: Counter[tuple[str, str]] = Counter()
    after = 0
    while batch := store.read(after, 5000):
        after = batch[-1].position
        for recorded in batch:
            event = recorded.event
            if isinstance(event, ContextCreated):
                found["create", event.name] += 1
            elif isinstance(event, AccessGranted):
                found["grant", event.grant.subject.name] += 1
            elif isinstance(event, RevisionPublished):
                found["revision", event.revision.id] += 1
            elif isinstance(event, ContextDeleted):
                found["delete", recorded.stream.key] += 1
    return found


def check_log(writes: list[Write], markers: Counter[tuple[str, str]]) -> list[str]:
    """What the log gets wrong about the answers the clients saw (empty: nothing)."""
    problems = []
    for write in writes:
        key = (write.kind, write.context if write.kind == "delete" else write.marker)
        count = markers.get(key, 0)
        if write.acknowledged and count != 1:
            problems.append(f"acknowledged {write} is in the log {count} times")
        elif write.refused and count:
            problems.append(f"refused {write} is in the log")
        elif write.status is None and count > 1:
            problems.append(f"unanswered {write} is in the log {count} times")
    return problems

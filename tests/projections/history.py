"""Generated histories: random but valid-ish command sequences written through the real
application, so projections see the event mix that production produces."""

from __future__ import annotations

import random
from datetime import UTC, datetime

from context_service.adapters.eventstore.application import ContextApplication
from context_service.domain.context import commands as c
from context_service.domain.context.events import QueryRecord, SourceRef
from context_service.domain.errors import DomainError
from context_service.domain.events import ADMIN, Subject

ACTORS = [Subject("user", "alice"), Subject("user", "bob"), Subject("agent", "summarizer"), ADMIN]
NAMES = ["alpha", "beta", "gamma"]
PERMS = ["read", "write", "attach", "derive", "administer"]


def _digest(rng: random.Random) -> str:
    return f"{rng.getrandbits(256):064x}"


def random_command(rng: random.Random, name: str) -> c.Command:
    actor = rng.choice(ACTORS)
    pick = rng.randrange(9)
    if pick == 0:
        return c.CreateContext(actor=actor, name=name, namespace="ns", type=rng.choice(
            ["memory", "knowledge", "state"]), backend="pvc", size=rng.choice(["1Gi", "1024Mi"]),
            access_mode="ReadWriteOnce")
    if pick == 1:
        perms = ["read", *rng.sample(PERMS[1:], rng.randrange(0, 4))]
        return c.GrantAccess(actor=actor, subject=rng.choice(ACTORS), permissions=tuple(perms))
    if pick == 2:
        return c.RevokeAccess(actor=actor, subject=rng.choice(ACTORS))
    if pick == 3:
        return c.AttachConsumer(actor=actor, subject=None, kind="agent",
                                name=rng.choice(["a", "b"]), access_mode="readOnly")
    if pick == 4:
        return c.DetachConsumer(actor=actor, subject=None, kind="agent",
                                name=rng.choice(["a", "b"]))
    if pick in (5, 6):
        return c.PublishRevision(actor=actor, id=_digest(rng), operation="sync",
                                 created_at=datetime(2026, 1, 1, tzinfo=UTC), files=1, bytes=2,
                                 sources=(SourceRef("src", "state", _digest(rng)),))
    if pick == 7:
        return c.ObserveClaim(actor=ADMIN, phase=rng.choice(["Pending", "Bound"]))
    return c.DeleteContext(actor=actor, force=rng.random() < 0.5)


def write_history(app: ContextApplication, seed: int, steps: int) -> int:
    """Write ``steps`` commands; return how many produced events."""
    rng = random.Random(seed)
    written = 0
    for _ in range(steps):
        name = rng.choice(NAMES)
        try:
            outcome = app.execute("ns", name, random_command(rng, name))
        except DomainError:
            continue
        written += outcome.position > 0
        if rng.random() < 0.1:
            _, state = app.load("ns", name)
            if state.live and state.type in ("memory", "knowledge") and state.current_revision:
                record = QueryRecord(id="r1", context=name, type=state.type,
                                     revision=state.current_revision, text="hello world")
                app.execute("ns", name, c.PublishQueryIndex(
                    actor=ADMIN, revision=state.current_revision, records=(record,)))
    return written

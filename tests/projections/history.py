"""Generated histories: random but valid-ish command sequences written through the real
application, so projections see the event mix that production produces."""

from __future__ import annotations

import contextlib
import itertools
import random
from datetime import UTC, datetime

from context_service.adapters.eventstore.application import ContextApplication
from context_service.domain.context import commands as c
from context_service.domain.context.events import QueryRecord, RecordField, SourceRef
from context_service.domain.context.index_upload import UploadPart
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


_CALLS = itertools.count()


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
        _, state = app.load("ns", name)
        if state.live and state.type in ("memory", "knowledge") and state.current_revision:
            for _ in range(rng.choice([0, 1, 4, 8])):
                with contextlib.suppress(DomainError):
                    app.execute("ns", name, _publish(rng, name, state.type,
                                                     state.current_revision))
    return written + _upload_tail(app, rng)


def _upload_tail(app: ContextApplication, rng: random.Random) -> int:
    """End with contexts whose index came in parts: one complete upload after a replaced one,
    then an open upload that never completes (it must not show)."""
    # unique per call: a test given examples over one database (Hypothesis) may draw one seed
    # twice, and a second create of the same names would fail
    tag = f"{rng.getrandbits(40):010x}-{next(_CALLS)}"
    for name in (f"uploads-{tag}-a", f"uploads-{tag}-b"):
        app.execute("ns", name, c.CreateContext(
            actor=ADMIN, name=name, namespace="ns", type="knowledge", backend="pvc", size="1Gi",
            access_mode="ReadWriteOnce"))
        revision = _digest(rng)
        app.execute("ns", name, c.PublishRevision(
            actor=ADMIN, id=revision, operation="sync",
            created_at=datetime(2026, 1, 1, tzinfo=UTC)))
        steps = [("old", 1, 3), ("new", 2, 2), ("new", 2, 2), ("new", 1, 2), ("open", 1, 2)]
        for upload_id, part, parts in steps:
            records = tuple(QueryRecord(id=f"{upload_id}-{part}-{k}", context=name,
                                        type="knowledge", revision=revision, text="hello world")
                            for k in range(rng.randrange(1, 4)))
            app.execute("ns", name, c.PublishQueryIndex(
                actor=ADMIN, revision=revision, records=records,
                upload=UploadPart(upload_id, part, parts)))
    return 2


def _publish(rng: random.Random, name: str, kind: str, revision: str) -> c.PublishQueryIndex:
    """One whole index, or one part of a multi-part upload (some never complete, some are
    replaced by a newer upload, some parts are sent twice)."""
    records = tuple(
        QueryRecord(id=f"r{rng.randrange(20)}", context=name, type=kind, revision=revision,
                    text=rng.choice(["hello world", "release schedule", "quarterly revenue"]),
                    fact_key=rng.choice(["", "fact/a"]),
                    fields=(RecordField("amount", "number", rng.randrange(100)),)
                    if rng.random() < 0.3 else ())
        for _ in range(rng.randrange(0, 4)))
    if rng.random() < 0.4:
        return c.PublishQueryIndex(actor=ADMIN, revision=revision, records=records)
    upload_id, parts = rng.choice([("u1", 2), ("u2", 3), ("u3", 1)])
    return c.PublishQueryIndex(actor=ADMIN, revision=revision, records=records,
                               upload=UploadPart(upload_id, rng.randint(1, parts), parts))

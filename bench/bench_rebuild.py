"""Projection rebuild rate against reading the raw notification log on the same database.

    python -m bench.bench_rebuild [--contexts 5000]
"""

from __future__ import annotations

import argparse
import time
from datetime import UTC, datetime, timedelta

from bench.harness import postgres
from context_service import bootstrap
from context_service.config import Settings
from context_service.domain.context import commands as c
from context_service.domain.context.decide import decide
from context_service.domain.context.state import ContextState, evolve
from context_service.domain.events import Event, Subject
from context_service.domain.stream import context_stream

OWNER = Subject("user", "owner")


def history(i: int, now: datetime) -> list[Event]:
    """A realistic stream: create, grants, a consumer, a few revisions."""
    name = f"ctx-{i}"
    cmds: list[c.Command] = [
        c.CreateContext(actor=OWNER, name=name, namespace="bench", type="memory", backend="pvc",
                        size="1Gi", access_mode="ReadWriteOnce"),
        c.GrantAccess(actor=OWNER, subject=Subject("agent", f"a{i % 7}"),
                      permissions=("read", "attach")),
        c.GrantAccess(actor=OWNER, subject=Subject("user", f"u{i % 5}"), permissions=("read",)),
        c.AttachConsumer(actor=OWNER, subject=None, kind="agent", name="worker",
                         access_mode="readOnly"),
    ]
    cmds += [c.PublishRevision(actor=OWNER, id=f"{i:032x}{r:032x}", created_at=now,
                               operation="sync", files=r, bytes=r) for r in range(6)]
    state, events = ContextState(), []
    for k, command in enumerate(cmds):
        for event in decide(command, state, now + timedelta(microseconds=k)):
            state = evolve(state, event)
            events.append(event)
    return events


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--contexts", type=int, default=5000)
    parser.add_argument("--batch", type=int, default=2000)
    args = parser.parse_args()
    with postgres() as (url, _):
        container = bootstrap.build(Settings(), url=url)
        now = datetime.now(UTC)
        for i in range(args.contexts):
            events = history(i, now)
            container.store.append(context_stream("bench", f"ctx-{i}"), 0, events)
        head = container.store.head()

        started = time.perf_counter()
        position, read = 0, 0
        while position < head:
            page = container.store.recorder.select_notifications(position + 1, 2000)
            read += len(page)
            position = page[-1].id
        raw = read / (time.perf_counter() - started)

        started = time.perf_counter()
        decoded = 0
        position = 0
        while position < head:
            batch = container.store.read(position, 2000)
            decoded += len(batch)
            position = batch[-1].position
        decode_rate = decoded / (time.perf_counter() - started)

        runner = container.runners["projections"]
        runner.batch_size = args.batch
        started = time.perf_counter()
        count = runner.rebuild()
        rebuild = count / (time.perf_counter() - started)
        single: dict[str, float] = {}
        for name in runner.names:  # as `context-service projections rebuild` does, one by one
            alone = container.runner_for([name])
            started = time.perf_counter()
            single[name] = alone.rebuild() / (time.perf_counter() - started)
        container.close()
    print(f"events in log:             {head}")
    print(f"raw notification read:     {raw:,.0f} events/s")
    print(f"read + decode (mapper):    {decode_rate:,.0f} events/s ({decode_rate / raw:.2f}x raw)")
    print(f"rebuild of {', '.join(runner.names)} together: {rebuild:,.0f} events/s "
          f"({rebuild / raw:.2f}x raw)")
    for name, rate in single.items():
        print(f"rebuild of {name} alone: {rate:,.0f} events/s ({rate / raw:.2f}x raw)")


if __name__ == "__main__":
    main()

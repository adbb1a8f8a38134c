"""``events tail`` printing a batch (src/adapters/nats/tail.py), over messages held in memory:
JetStream delivers a message again when its ack was lost (a server killed before it wrote the
ack down), and the tail must not print an event twice for it."""

from __future__ import annotations

import asyncio
import io
import json
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from context_service.adapters.nats import tail
from context_service.adapters.nats.envelope import encode
from tests.support.nats_fixtures import make_event


@dataclass
class Delivered:
    """A message as the client hands it over: its stream sequence and what was done with it."""

    seq: int
    acks: list[str] = field(default_factory=list)

    @property
    def data(self) -> bytes:
        return encode(make_event(self.seq))

    @property
    def subject(self) -> str:
        return "context.events.x"

    @property
    def metadata(self) -> Any:
        return SimpleNamespace(sequence=SimpleNamespace(stream=self.seq))

    async def ack(self) -> None:
        self.acks.append("ack")

    async def nak(self) -> None:
        self.acks.append("nak")


def printed(batches: list[list[Delivered]], progress: Any) -> list[int]:
    out = io.StringIO()
    for batch in batches:
        asyncio.run(tail._print_batch(batch, out, "json", progress))  # type: ignore[arg-type]
    return [json.loads(line)["position"] for line in out.getvalue().splitlines()]


def test_a_message_delivered_again_after_its_ack_was_lost_is_acknowledged_not_printed() -> None:
    progress = tail._Progress()
    first = [Delivered(n) for n in (1, 2, 3)]
    again = Delivered(2)  # its ack did not survive the server's restart
    later = [again, Delivered(4)]
    assert printed([first, later], progress) == [1, 2, 3, 4]
    assert progress.printed == 4
    assert again.acks == ["ack"]  # acknowledged, so the server stops sending it


def test_what_a_tail_remembers_is_bounded() -> None:
    progress = tail._Progress()
    printed([[Delivered(n) for n in range(1, tail.REMEMBERED + 50)]], progress)
    assert len(progress.handled) == tail.REMEMBERED

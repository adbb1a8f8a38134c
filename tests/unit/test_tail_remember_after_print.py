"""``events tail`` remembers a stream sequence as handled only once it was printed (or passed
over): a message whose line could not be written is handed back (nak) and, delivered again to
the same tail, printed then, not acknowledged unprinted as a lost ack's redelivery."""

from __future__ import annotations

import asyncio
import io
import json

import pytest

from context_service.adapters.nats import tail
from tests.unit.test_tail_redelivery import Delivered


class FailsOnce(io.StringIO):
    """Standard output whose first write fails (an interrupted write)."""

    def __init__(self) -> None:
        super().__init__()
        self.failed = False

    def write(self, s: str) -> int:
        if not self.failed:
            self.failed = True
            raise InterruptedError("interrupted")
        return super().write(s)


def test_a_message_handed_back_unprinted_is_printed_when_delivered_again() -> None:
    progress = tail._Progress()
    out = FailsOnce()
    first = Delivered(1)
    with pytest.raises(InterruptedError):
        asyncio.run(tail._print_batch([first], out, "json", progress))  # type: ignore[list-item]
    assert first.acks == ["nak"]  # handed back, never printed
    again = Delivered(1)
    asyncio.run(tail._print_batch([again], out, "json", progress))  # type: ignore[list-item]
    assert [json.loads(line)["position"] for line in out.getvalue().splitlines()] == [1]
    assert progress.printed == 1
    assert again.acks == ["ack"]

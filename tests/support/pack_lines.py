"""A small streamed pack, line by line, for the client's tests without a service: its header,
one item and its footer as the contract's Structs, and an answer's body chunk by chunk."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import httpx

from context_service.contract import agent as c

BASE = "http://cs.example"
HASH = "sha256:" + "0" * 64
AS_OF = c.PackAsOf(valid_time="2025-01-01T00:00:00Z", system_time="2025-01-01T00:00:00Z",
                   position=1)
HEADER = c.HeaderLine(pack_id="pk_" + "0" * 32, replay_id="rp_" + "1" * 32, as_of=AS_OF,
                      budget=c.StreamBudget(max_tokens=2000, coverage="best_effort"))
ITEM = c.PackItem(id="psg:facts/a", class_="evidence", trust="untrusted", text="A fact.",
                  tokens=3, score=1.0, source=c.ItemSource(kind="passage"), hash=HASH)
FOOTER = c.FooterLine(
    used_tokens=3, complete=True,
    omitted=c.Omitted(budget=c.Counted(count=0, ids=[]), duplicate=c.Counted(count=0, ids=[]),
                      access=c.Counted(count=0)),
    missing=[], receipt=c.Receipt(algorithm="sha256", merkle_root=HASH, position=1),
    expires_at="2025-02-01T00:00:00Z")


class Chunks(httpx.SyncByteStream, httpx.AsyncByteStream):
    """An answer's body chunk by chunk, ending with ``error`` raised if given; records whether
    it was closed."""

    def __init__(self, chunks: list[bytes], error: Exception | None = None) -> None:
        self.chunks = chunks
        self.error = error
        self.closed = False

    def __iter__(self) -> Iterator[bytes]:
        yield from self.chunks
        if self.error is not None:
            raise self.error

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self.chunks:
            yield chunk
        if self.error is not None:
            raise self.error

    def close(self) -> None:
        self.closed = True

    async def aclose(self) -> None:
        self.closed = True

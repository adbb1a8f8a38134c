"""A whole history as one ``{"items": [...]}`` answer, sent a page at a time.

A context's revisions and its audit grow without bound; read, rendered and encoded at once, one
answer would cost memory in proportion to all of it. Both are ordered by (position, seq), so a
reading walks that key a page at a time (a short transaction each: a slow reader holds no
connection) and sends each page as it is rendered, in the bytes one body would have had."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar, cast

import msgspec
from litestar import Response
from litestar.response import Stream

from context_service.http.common import in_thread, json

T = TypeVar("T")
Key = tuple[int, int]  # (position, seq): the order a history is kept, read and paged in
START: Key = (0, -1)  # before every item
PAGE = 1000  # items read, rendered and sent at a time
_ENC = msgspec.json.Encoder()


@dataclass(frozen=True, slots=True)
class History(Generic[T]):
    """One history as a route reads it (one generation of one context): ``last`` the key of
    its newest item (None: it has none), ``page`` at most ``limit`` items after a key and up to
    another inclusive, oldest first; ``key`` and ``render`` of an item; ``what`` it is, for
    the error that ends a reading whose history lost items meanwhile."""

    last: Callable[[], Key | None]
    page: Callable[[Key, Key, int], Sequence[T]]
    key: Callable[[T], Key]
    render: Callable[[T], Any]
    what: str


def every_item(history: History[T], after: Key = START) -> Response[Any]:
    """Every item after ``after`` as of now, in the bytes one JSON body would have. A history
    of one page or less is that body (with its length); a longer one is streamed. It ends at
    the item newest as the route's checks passed: later items belong to later readings, and a
    generation created after a delete is never another's history. Call it once everything
    that can refuse the request has run: once streaming, a failure can only cut the body
    short, never become a 4xx."""
    through = history.last()
    if through is None or through <= after:
        return json({"items": []})
    first = history.page(after, through, PAGE)
    if not first or history.key(first[-1]) == through:
        return json({"items": [history.render(i) for i in first]})
    streamed = Stream(_body(_Reading(history, through), _items(history, first),
                            history.key(first[-1])),
                      status_code=200, media_type="application/json")
    return cast("Response[Any]", streamed)  # the same body, a page at a time


def _items(history: History[T], page: Sequence[T]) -> bytes:
    """``page`` as the JSON of an ``items`` array without its brackets: what the answer of one
    ``{"items": [...]}`` would hold there, byte for byte."""
    return _ENC.encode([history.render(i) for i in page])[1:-1]


@dataclass(frozen=True, slots=True)
class _Reading(Generic[T]):
    history: History[T]
    through: Key

    def next(self, after: Key) -> tuple[bytes, Key]:
        """The page after ``after``, rendered, and where it ended. Empty short of ``through``,
        the history lost items it had a moment ago (a view rebuilt meanwhile): an error, not a
        shorter history that looks whole."""
        page = self.history.page(after, self.through, PAGE)
        if not page:
            raise RuntimeError(f"the {self.history.what} ended before the item the reading"
                               " began at")
        return _items(self.history, page), self.history.key(page[-1])


async def _body(reading: _Reading[T], first: bytes, after: Key) -> AsyncIterator[bytes]:
    """The first page (already read), then each next one read and rendered on a worker thread
    (the event loop only sends), up to the reading's end."""
    yield b'{"items":[' + first
    while after < reading.through:
        chunk, after = await in_thread(reading.next, after)
        yield b"," + chunk
    yield b"]}"

"""The write model's cache of stream states is bounded by the events folded into them, not only
by the number of streams: a few streams of very many events (a context granted to a hundred
thousand subjects, a revision published every minute for years) would otherwise hold their whole
state in memory for ever."""

from __future__ import annotations

from typing import Any

from context_service.adapters.eventstore.application import StreamApplication
from context_service.domain.stream import Recorded, StreamRef


class LongStreams:
    """A log of the project's own port's shape (``load``): stream ``k`` holds ``versions[k]``
    events, each folded into the state as one more item."""

    def __init__(self, versions: dict[str, int]) -> None:
        self.versions = versions

    def load(self, stream: StreamRef, after_version: int = 0) -> list[Recorded]:
        return [Recorded(position=v, stream=stream, version=v, name="Noted", event=None)  # type: ignore[arg-type]
                for v in range(after_version + 1, self.versions[stream.key] + 1)]


def application(versions: dict[str, int], **bounds: Any) -> StreamApplication[list[int]]:
    return StreamApplication(LongStreams(versions), "test", list,  # type: ignore[arg-type]
                             lambda state, _: [*state, 0], lambda *_: [], **bounds)


def test_the_states_held_are_bounded_by_the_events_folded_into_them() -> None:
    streams = {f"s{i}": 1_000 for i in range(10)}
    app = application(streams, cache_size=4096, cache_events=3_500)
    for key in streams:
        version, state = app.load_stream(app.stream("ns", key))
        assert version == 1_000 and len(state) == 1_000
    assert app.held_events() <= 3_500
    assert app.cached(app.stream("ns", "s9"))[0] == 1_000  # the latest kept
    assert app.cached(app.stream("ns", "s0"))[0] == 0  # the oldest let go: read again


def test_a_stream_longer_than_the_whole_bound_is_served_but_not_kept() -> None:
    app = application({"long": 5_000, "short": 10}, cache_events=3_500)
    app.load_stream(app.stream("ns", "short"))
    version, state = app.load_stream(app.stream("ns", "long"))
    assert version == 5_000 and len(state) == 5_000
    assert app.cached(app.stream("ns", "long"))[0] == 0
    assert app.cached(app.stream("ns", "short"))[0] == 10  # nothing else let go for it
    assert app.held_events() == 10


def test_a_stream_that_grows_past_the_bound_is_let_go_not_kept_stale() -> None:
    streams = {"growing": 3_000}
    app = application(streams, cache_events=3_500)
    app.load_stream(app.stream("ns", "growing"))
    assert app.cached(app.stream("ns", "growing"))[0] == 3_000
    streams["growing"] = 4_000
    assert app.load_stream(app.stream("ns", "growing"))[0] == 4_000
    assert app.cached(app.stream("ns", "growing"))[0] == 0 and app.held_events() == 0

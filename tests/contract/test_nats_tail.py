"""``events tail``: a durable consumer with explicit acks that prints what arrives."""

from __future__ import annotations

import io
import json
import threading

import pytest

from context_service.adapters.nats.stream import StreamSpec
from context_service.adapters.nats.tail import TailError, tail
from context_service.projections.outbox import MemoryFeed
from tests.support.nats_fixtures import (
    NatsServerHandle,
    free_port,
    make_events,
    publish_feed,
)

pytestmark = pytest.mark.nats


def test_durable_tail_continues_where_it_stopped(
    nats_server: NatsServerHandle, nats_stream: StreamSpec
) -> None:
    publish_feed(nats_server.url, nats_stream, MemoryFeed(make_events(30)), 30)
    everything = f"{nats_stream.subject_prefix}.>"
    first, second = io.StringIO(), io.StringIO()
    name = nats_stream.name
    assert tail(nats_server.url, everything, "reader", first, limit=10, stream=name) == 10
    assert tail(nats_server.url, everything, "reader", second, limit=20, stream=name) == 20
    positions = [
        json.loads(line)["position"] for line in (first.getvalue() + second.getvalue()).splitlines()
    ]
    assert positions == list(range(1, 31))


def test_subject_filter_and_readable_lines(
    nats_server: NatsServerHandle, nats_stream: StreamSpec
) -> None:
    publish_feed(nats_server.url, nats_stream, MemoryFeed(make_events(40)), 40)
    out = io.StringIO()
    only_team_a = f"{nats_stream.subject_prefix}.team-a.>"
    count = tail(
        nats_server.url, only_team_a, "team-a", out, limit=10, stream=nats_stream.name, fmt="text"
    )
    lines = out.getvalue().splitlines()
    assert count == 10 and all("team-a/context/" in line for line in lines)
    assert lines[0].startswith("#4 2025-01-01T00:00:00.004000Z team-a/context/")


def test_tail_prints_events_as_they_arrive(
    nats_server: NatsServerHandle, nats_stream: StreamSpec
) -> None:
    feed = MemoryFeed(make_events(5))
    publish_feed(nats_server.url, nats_stream, feed, 5)  # creates the stream
    out = io.StringIO()
    result: list[int] = []
    reader = threading.Thread(
        target=lambda: result.append(
            tail(nats_server.url, f"{nats_stream.subject_prefix}.>", "live", out, limit=15,
                 stream=nats_stream.name)
        )
    )  # fmt: skip
    reader.start()
    feed.extend(make_events(10, start=6))
    publish_feed(nats_server.url, nats_stream, feed, 15)
    reader.join(30)
    assert result == [15]


def test_unreachable_nats_and_foreign_subjects_are_clear_errors(
    nats_server: NatsServerHandle, nats_stream: StreamSpec
) -> None:
    with pytest.raises(TailError, match="cannot reach NATS"):
        tail(f"nats://127.0.0.1:{free_port()}", out=io.StringIO(), limit=1, connect_wait=0.5)
    publish_feed(nats_server.url, nats_stream, MemoryFeed(make_events(1)), 1)
    with pytest.raises(TailError, match="cannot consume"):
        tail(nats_server.url, "elsewhere.>", "x", io.StringIO(), limit=1, stream=nats_stream.name)


def test_tail_takes_a_list_of_servers(
    nats_server: NatsServerHandle, nats_stream: StreamSpec
) -> None:
    publish_feed(nats_server.url, nats_stream, MemoryFeed(make_events(5)), 5)
    out = io.StringIO()
    cluster = f"nats://127.0.0.1:{free_port()}, {nats_server.url}"
    assert tail(cluster, f"{nats_stream.subject_prefix}.>", "listed", out, limit=5,
                stream=nats_stream.name) == 5
    assert [json.loads(line)["position"] for line in out.getvalue().splitlines()] == [1, 2, 3, 4, 5]

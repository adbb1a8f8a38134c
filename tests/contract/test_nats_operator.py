"""Streams an operator tuned by hand: limits, replicas and subjects the relay must keep when it
brings its own settings in line, and a stream that discards new messages once it is full."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import signal
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import msgspec
import nats
import pytest
from nats.js import api

from context_service.adapters.nats.envelope import decode
from context_service.adapters.nats.relay import Relay, RelaySettings
from context_service.adapters.nats.server import find_binary, probe
from context_service.adapters.nats.stream import StreamSpec, ensure_stream
from context_service.adapters.nats.worker import RelayWorker
from context_service.config import Settings
from context_service.projections.outbox import MemoryFeed, MemoryPositionStore
from tests.support.nats_fixtures import (
    NatsServerHandle,
    free_port,
    fresh_stream_spec,
    make_events,
    positions_of,
    read_stream,
    wait_until,
)

pytestmark = pytest.mark.nats

OWNED = {"subjects", "duplicate_window", "max_age", "retention", "no_ack"}


async def _stream_config(url: str, name: str) -> api.StreamConfig:
    nc = await nats.connect(url)
    try:
        return (await nc.jetstream().stream_info(name)).config
    finally:
        await nc.close()


async def _create_then_ensure(
    url: str, config: api.StreamConfig, spec: StreamSpec
) -> tuple[api.StreamConfig, api.StreamConfig]:
    """The stream's config as the server created it, and after ``ensure_stream``."""
    nc = await nats.connect(url)
    try:
        js = nc.jetstream()
        created = (await js.add_stream(config)).config
        return created, (await ensure_stream(js, spec)).config
    finally:
        await nc.close()


def _operators(config: api.StreamConfig) -> dict[str, Any]:
    """What the relay does not own, without the server's own metadata (its version)."""
    fields = {k: v for k, v in dataclasses.asdict(config).items() if k not in OWNED}
    fields["metadata"] = {k: v for k, v in (config.metadata or {}).items()
                          if not k.startswith("_nats")}
    return fields


def test_bringing_the_window_and_age_in_line_keeps_every_setting_of_the_operator(
    nats_server: NatsServerHandle, nats_stream: StreamSpec
) -> None:
    tuned = dataclasses.replace(
        nats_stream.config(),
        description="events, kept a week on fast disks",
        retention=api.RetentionPolicy.INTEREST,
        max_msgs=1_000_000, max_bytes=2**30, max_msgs_per_subject=50_000,
        max_msg_size=2**20, max_consumers=16, discard=api.DiscardPolicy.OLD,
        compression=api.StoreCompression.S2, deny_delete=True, allow_direct=False,
        metadata={"owner": "platform-team"},
    )
    wanted = dataclasses.replace(nats_stream, duplicate_window=30.0, max_age=3600.0)
    created, config = asyncio.run(_create_then_ensure(nats_server.url, tuned, wanted))
    assert (config.duplicate_window, config.max_age) == (pytest.approx(30.0),
                                                         pytest.approx(3600.0))
    assert config.retention == api.RetentionPolicy.LIMITS
    assert created.max_bytes == 2**30 and created.deny_delete  # the server took the tuning
    assert _operators(config) == _operators(created)


@pytest.mark.parametrize(
    ("operator_subjects", "kept"),
    [
        (["{ours}", "audit.>"], ["{ours}", "audit.>"]),
        (["{first}.>"], ["{first}.>"]),
        (["audit.>", "{prefix}.team-a.>"], ["audit.>", "{ours}"]),
        (["elsewhere.>"], ["elsewhere.>", "{ours}"]),
    ],
    ids=["added-subject", "wider-subject", "narrower-subject", "moved-subjects"],
)
def test_subjects_an_operator_added_are_kept_and_ours_are_covered(
    nats_server: NatsServerHandle, nats_stream: StreamSpec,
    operator_subjects: list[str], kept: list[str],
) -> None:
    names = {"ours": nats_stream.subjects[0], "prefix": nats_stream.subject_prefix,
             "first": nats_stream.subject_prefix.split(".")[0]}
    created = dataclasses.replace(nats_stream.config(),
                                  subjects=[s.format(**names) for s in operator_subjects])
    _, config = asyncio.run(_create_then_ensure(nats_server.url, created, nats_stream))
    assert config.subjects == [s.format(**names) for s in kept]
    relay = Relay(MemoryFeed(make_events(5)), MemoryPositionStore(),
                  RelaySettings(url=nats_server.url, stream=nats_stream))
    relay.start()
    try:
        wait_until(lambda: relay.stats.last_position == 5, what="published")
    finally:
        relay.stop()
    assert positions_of(read_stream(nats_server.url, nats_stream)) == [1, 2, 3, 4, 5]


# -- a stream that discards new messages once full ------------------------------------------


class PauseRecorder(Relay):
    """A relay that notes how long it waits between sessions."""

    pauses: list[float]

    async def _pause(self, seconds: float) -> None:
        self.pauses.append(seconds)
        await super()._pause(seconds)


async def _raise_limit(url: str, name: str, limit: str) -> None:
    nc = await nats.connect(url)
    try:
        js = nc.jetstream()
        config = (await js.stream_info(name)).config
        await js.update_stream(dataclasses.replace(config, **{limit: -1}))
    finally:
        await nc.close()


def _stream_full_gauge(worker: RelayWorker) -> float:
    [value] = [v for name, _, _, v in worker.gauges() if name == "cs_relay_stream_full"]
    return value


@pytest.mark.parametrize(("limit", "value"), [("max_msgs", 10), ("max_bytes", 4096)])
def test_a_full_stream_that_discards_new_events_holds_the_relay_back_visibly_and_loses_nothing(
    nats_server: NatsServerHandle, nats_stream: StreamSpec, caplog: pytest.LogCaptureFixture,
    tmp_path: Path, limit: str, value: int,
) -> None:
    caplog.set_level(logging.DEBUG, logger="context_service.adapters.nats")
    full = dataclasses.replace(nats_stream.config(), discard=api.DiscardPolicy.NEW,
                               **{limit: value})
    asyncio.run(_create_then_ensure(nats_server.url, full, nats_stream))
    feed, positions = MemoryFeed(make_events(40)), MemoryPositionStore()
    worker = RelayWorker(Settings(data_dir=tmp_path, nats_url=nats_server.url, kube_mode="off"),
                         feed, positions)
    settings = RelaySettings(url=nats_server.url, stream=nats_stream, backoff_initial=0.001,
                             backoff_max=0.05, full_report_interval=3600.0)
    relay = worker.relay = PauseRecorder(feed, positions, settings)
    relay.pauses = []
    worker.start()
    try:
        wait_until(lambda: relay.stats.errors >= 4, what="refused attempts")
        stalled, gauge = relay.stats, _stream_full_gauge(worker)
        asyncio.run(_raise_limit(nats_server.url, nats_stream.name, limit))
        wait_until(lambda: relay.stats.last_position == 40, what="published once there is room")
    finally:
        worker.stop()
    assert stalled.stream_full and gauge == 1.0
    assert not relay.stats.stream_full and _stream_full_gauge(worker) == 0.0
    # no busy loop: a full stream frees room only when someone acts, so no quick retries
    assert min(relay.pauses) >= 0.8 * settings.backoff_max
    reports = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(reports) == 1, [r.getMessage() for r in reports]  # once per interval
    [report] = reports
    assert report.levelno == logging.ERROR
    assert "full" in report.getMessage() and limit in report.getMessage()
    assert "discard" in report.getMessage()
    assert (getattr(report, "stream", None), getattr(report, "limit", None)) == (
        nats_stream.name, limit)
    assert getattr(report, "position", 0) > 0
    assert positions_of(read_stream(nats_server.url, nats_stream)) == list(range(1, 41))
    assert (relay.stats.published, relay.stats.duplicates) == (40, 0)
    config = asyncio.run(_stream_config(nats_server.url, nats_stream.name))
    assert config.discard == api.DiscardPolicy.NEW  # the operator's choice stays


# -- the server's max_payload changed while the relay is connected ---------------------------


@pytest.fixture
def reloadable_server(tmp_path: Path) -> Iterator[tuple[str, Callable[[int], None]]]:
    """A nats-server started from a config file, and a way to change its ``max_payload`` by a
    reload (SIGHUP), as an operator does without restarting it."""
    binary = find_binary()
    assert binary is not None, "nats-server binary not found"
    port, config = free_port(), tmp_path / "nats.conf"

    def write(max_payload: int) -> None:
        config.write_text(f'port: {port}\nhost: "127.0.0.1"\nmax_payload: {max_payload}\n'
                          f'jetstream {{ store_dir: "{tmp_path / "js"}" }}\n')

    write(8192)
    proc = subprocess.Popen([str(binary), "-c", str(config)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)

    def reload(max_payload: int) -> None:
        write(max_payload)
        proc.send_signal(signal.SIGHUP)
        wait_until(lambda: (probe("127.0.0.1", port) or {}).get("max_payload") == max_payload,
                   what="the reloaded max_payload")

    try:
        wait_until(lambda: proc.poll() is None and probe("127.0.0.1", port) is not None,
                   what="nats-server ready")
        yield f"nats://127.0.0.1:{port}", reload
    finally:
        proc.terminate()
        proc.wait(10)


def test_a_max_payload_raised_while_connected_is_used_before_any_data_is_left_out(
    reloadable_server: tuple[str, Callable[[int], None]],
) -> None:
    """A reload tells no connected client its new limit: the relay must not leave an event's
    data out (for good: the stand-in is in the stream) on the strength of a limit it was told
    when it connected, which the operator has since raised to let such events through."""
    url, reload = reloadable_server
    spec = fresh_stream_spec()
    feed = MemoryFeed(make_events(3))
    relay = Relay(feed, MemoryPositionStore(),
                  RelaySettings(url=url, stream=spec, backoff_initial=0.01))
    relay.start()
    try:
        wait_until(lambda: relay.stats.last_position == 3, what="published")
        reload(1024 * 1024)
        large = msgspec.structs.replace(make_events(1, start=4)[0], data={"note": "x" * 20_000})
        feed.extend([large, *make_events(2, start=5)])
        wait_until(lambda: relay.stats.last_position == 6, what="published after the reload")
    finally:
        relay.stop()
    messages = read_stream(url, spec)
    assert positions_of(messages) == [1, 2, 3, 4, 5, 6]
    assert "Cs-Data-Omitted" not in messages[3].headers
    assert decode(messages[3].payload) == large
    assert (relay.stats.omitted, relay.stats.duplicates) == (0, 0)


# -- what the log says while the relay keeps failing -----------------------------------------


def test_a_new_cause_of_failure_is_logged_even_while_the_relay_is_failing(
    private_nats_server: NatsServerHandle, caplog: pytest.LogCaptureFixture
) -> None:
    """NATS is down at start, then comes back with a stream the relay refuses: the warning an
    operator reads must name the refusal, not only the outage that came first."""
    caplog.set_level(logging.DEBUG, logger="context_service.adapters.nats")
    spec = fresh_stream_spec()

    async def add_work_queue() -> None:
        nc = await nats.connect(private_nats_server.url)
        try:
            config = dataclasses.replace(spec.config(), retention=api.RetentionPolicy.WORK_QUEUE)
            await nc.jetstream().add_stream(config)
        finally:
            await nc.close()

    asyncio.run(add_work_queue())
    private_nats_server.stop()
    relay = Relay(MemoryFeed(make_events(3)), MemoryPositionStore(),
                  RelaySettings(url=private_nats_server.url, stream=spec, backoff_initial=0.01,
                                backoff_max=0.05))
    relay.start()
    try:
        wait_until(lambda: relay.stats.errors >= 2, what="failed connections")
        private_nats_server.start()
        wait_until(lambda: "work queue" in (relay.stats.last_error or ""), what="the refusal")
        refusals = relay.stats.errors
        wait_until(lambda: relay.stats.errors >= refusals + 2, what="more refusals")
    finally:
        relay.stop()
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len([w for w in warnings if "no servers available" in w]) == 1, warnings
    assert len([w for w in warnings if "work queue" in w]) == 1, warnings  # once, not per retry

"""SIGKILL of ``serve`` while the relay's publications hang in a paused nats-server (SIGSTOP): the
relay has sent events JetStream has not acknowledged, so its checkpoint is behind what the server
will store once it runs again. The service is started again while NATS is still paused, writes go
on, then NATS resumes and reads both the dead relay's buffered publications and the new relay's:
the stream must hold every log position exactly once, in log order, and the relay's checkpoint
must reach the log head."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from context_service import bootstrap
from context_service.adapters.nats.stream import StreamSpec
from tests.e2e.server import ServerProcess
from tests.faults.burst import SUBJECT, context_body
from tests.support.nats_fixtures import NatsServerHandle, positions_of, read_stream, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.postgres, pytest.mark.nats]


@pytest.fixture
def relaying(tmp_path: Path, database_url: str,
             private_nats_server: NatsServerHandle) -> Iterator[ServerProcess]:
    proc = ServerProcess(tmp_path / "serve", env={"CS_WORKERS": "projections,relay",
                                                  "CS_NATS_URL": private_nats_server.url})
    proc.data_dir.mkdir()
    proc.env["CS_DATABASE_URL"] = database_url
    yield proc
    if proc.proc is not None and proc.proc.poll() is None:
        proc.kill()


def _nats_pid(server: NatsServerHandle) -> int:
    child = server.server._child
    assert child is not None and child.pid is not None
    return int(child.pid)


def _write(url: str, prefix: str, count: int) -> None:
    with httpx.Client(base_url=url, headers=SUBJECT, timeout=30) as http:
        for i in range(count):
            answer = http.post("/v1/contexts", json=context_body(f"{prefix}-{i}"))
            assert answer.status_code == 201, answer.text


def _relay_checkpoint(container: bootstrap.Container) -> int:
    return container.tracking.max_tracking_id("relay") or 0


def test_a_relay_killed_with_publications_in_a_paused_server_publishes_each_event_once(
        relaying: ServerProcess, private_nats_server: NatsServerHandle,
        inspector: bootstrap.Container) -> None:
    url = private_nats_server.url
    spec = StreamSpec()
    relaying.start()
    _write(relaying.url, "before", 10)
    head = inspector.store.head()
    wait_until(lambda: len(read_stream(url, spec)) >= head, what="the first events relayed")

    nats = _nats_pid(private_nats_server)
    os.kill(nats, signal.SIGSTOP)
    try:
        _write(relaying.url, "paused", 20)  # appends need no NATS; their publications hang
        time.sleep(0.5)  # the relay sends them into the paused server's socket
        relaying.kill()
        relaying.launch()  # again, NATS still paused: the relay cannot resume yet
        relaying.wait_until(lambda: _healthy(relaying), 30, "did not serve")
        _write(relaying.url, "after", 10)
    finally:
        os.kill(nats, signal.SIGCONT)

    head = inspector.store.head()
    wait_until(lambda: _relay_checkpoint(inspector) >= head, timeout=30,
               what="the relay's checkpoint at the log head")
    published = positions_of(read_stream(url, spec))
    assert published == list(range(1, head + 1)), (
        f"stream positions differ from the log's 1..{head}: "
        f"{sorted({p for p in published if published.count(p) > 1})} twice, "
        f"{sorted(set(range(1, head + 1)) - set(published))} missing")


def _healthy(proc: ServerProcess) -> bool:
    try:
        return httpx.get(proc.url + "/healthz", timeout=1).status_code == 200
    except httpx.HTTPError:
        return False

"""The embedded nats-server: starts with JetStream in its store dir, reuses a NATS server already
on the address, refuses anything else there, and stops what it started."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from context_service.adapters.nats.server import (
    EmbeddedNatsServer,
    NatsServerError,
    probe,
    split_listen,
)
from tests.support.nats_fixtures import NatsServerHandle, free_port

pytestmark = pytest.mark.nats


def test_starts_with_jetstream_and_stops(tmp_path: Path) -> None:
    port = free_port()
    server = EmbeddedNatsServer(tmp_path / "nats", f"127.0.0.1:{port}")
    with server:
        info = probe("127.0.0.1", port)
        assert info is not None and info["jetstream"] is True
        assert server.url == f"nats://127.0.0.1:{port}" and server.running
        assert (tmp_path / "nats" / "jetstream").is_dir()
    assert probe("127.0.0.1", port) is None and not server.running


def test_reuses_a_nats_server_already_listening(
    nats_server: NatsServerHandle, tmp_path: Path
) -> None:
    again = EmbeddedNatsServer(tmp_path / "other", f"127.0.0.1:{nats_server.server.port}")
    assert again.start() == nats_server.url and again.reused
    again.stop()
    assert probe("127.0.0.1", nats_server.server.port) is not None  # left running


@pytest.fixture
def not_nats() -> Iterator[int]:
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve() -> None:
        listener.settimeout(0.1)
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            with conn:
                conn.sendall(b"HTTP/1.1 400 Bad Request\r\n\r\n")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield listener.getsockname()[1]
    stop.set()
    thread.join()
    listener.close()


def test_refuses_an_address_served_by_something_else(not_nats: int, tmp_path: Path) -> None:
    with pytest.raises(NatsServerError, match="other than NATS"):
        EmbeddedNatsServer(tmp_path, f"127.0.0.1:{not_nats}").start()


def test_a_server_that_cannot_start_reports_its_log(tmp_path: Path) -> None:
    with socket.socket() as blocker:  # bound, not listening: connects are refused, binds fail
        blocker.bind(("127.0.0.1", 0))
        server = EmbeddedNatsServer(tmp_path / "nats", f"127.0.0.1:{blocker.getsockname()[1]}")
        with pytest.raises(NatsServerError, match="exited early"):
            server.start(timeout=10)
    assert not server.running


def test_listen_addresses() -> None:
    assert split_listen("127.0.0.1:4222") == ("127.0.0.1", 4222)
    assert split_listen(":4333") == ("0.0.0.0", 4333)
    assert split_listen("[::1]:4222") == ("::1", 4222)
    assert EmbeddedNatsServer(Path("x"), "0.0.0.0:5000").url == "nats://127.0.0.1:5000"
    assert EmbeddedNatsServer(Path("x"), "[::1]:5000").url == "nats://[::1]:5000"
    with pytest.raises(NatsServerError):
        split_listen("localhost")

"""The Kubernetes client's connection pool holds as many connections as the service's callers
use at once: the HTTP requests' calls (16 slots), the watches and the background threads. With
the client's default (5 a core: 10 here), every connection beyond it was closed after its call
and logged a warning, "Connection pool is full, discarding connection"."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from kubernetes.client import Configuration

from context_service.adapters.kubernetes import client
from context_service.adapters.kubernetes.rest import REQUEST_SLOTS, Rest

AT_ONCE = REQUEST_SLOTS + 8  # the request slots, and more callers than the default's 10


@pytest.fixture
def server() -> Iterator[str]:
    """An HTTP server whose answers wait until ``AT_ONCE`` requests are open at once."""
    everyone = threading.Barrier(AT_ONCE, timeout=10)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            everyone.wait()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"{}")

        def log_message(self, *args: object) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def test_as_many_calls_at_once_as_the_service_makes_keep_their_connections(
        server: str, caplog: pytest.LogCaptureFixture) -> None:
    configuration = Configuration()
    configuration.host = server
    api = client._client(configuration)
    rest = Rest(api)
    failures: list[BaseException] = []

    def call() -> None:
        try:
            rest.get("/api/v1/namespaces/x/pods")
        except BaseException as exc:  # reported below
            failures.append(exc)

    callers = [threading.Thread(target=call) for _ in range(AT_ONCE)]
    with caplog.at_level(logging.WARNING, logger="urllib3.connectionpool"):
        for caller in callers:
            caller.start()
        for caller in callers:
            caller.join(20)
    client.close(api)
    assert failures == []
    assert [r.getMessage() for r in caplog.records
            if "Connection pool is full" in r.getMessage()] == []


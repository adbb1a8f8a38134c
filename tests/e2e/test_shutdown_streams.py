"""A pack stream still being written when the service shuts down ends with the stream's error
line (agent-context-api.md §7.14) once the grace is over, not with a cut connection: a client can
tell a stream the service stopped from a network failure, and the typed client and ``contextctl
agent pack --stream`` report it as the failure it is.

The streams are held open by clients that read slowly: a small receive window (and segment
size), so the service cannot hand a whole pack to the kernel and its writes wait for the reader.
The service shares a database of the suite's PostgreSQL."""

from __future__ import annotations

import json
import random
import signal
import socket
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import click
import httpx
import pytest

from context_service.client.errors import StreamFailed
from context_service.client.sync import PackStream
from context_service.contextctl.packs import from_stream
from context_service.contract import agent as c
from tests.e2e.server import ServerProcess, await_no_processes
from tests.e2e.test_packs_engine2_determinism import ADMIN, ALICE, REV, WS

pytestmark = [pytest.mark.e2e, pytest.mark.postgres, pytest.mark.slow]
PACKS = "/api/agent/v1/context-packs"
GRACE = 4
SHUTTING_DOWN = "the service is shutting down; retry against another instance"
ERROR_LINE = {"type": "error", "code": "INTERNAL_ERROR", "message": SHUTTING_DOWN}
REQUEST = {"task": "ledger", "retrieval": "lexical", "budget": {"maxTokens": 32000},
           "asOf": {"validTime": "2026-06-01T00:00:00Z"}}
TYPED_REQUEST = c.PackRequest(task="ledger", retrieval="lexical",
                              budget=c.Budget(max_tokens=32000),
                              as_of=c.AsOf(valid_time="2026-06-01T00:00:00Z"))
WORDS = ("account", "balance", "quarter", "invoice", "supplier", "payment", "audit", "report",
         "revenue", "margin", "forecast", "budget", "expense", "travel", "office", "customer",
         "contract", "renewal", "discount", "region", "north", "south", "team", "review")
# a reader that takes a few kilobytes at a time: what the service sends waits in its buffers
SLOW_READER = [(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096),
               (socket.IPPROTO_TCP, socket.TCP_MAXSEG, 536)]


@pytest.fixture
def server(data_dir: Path, database_url: str) -> Iterator[ServerProcess]:
    proc = ServerProcess(data_dir, env={"CS_WORKERS": "projections,query-index",
                                        "CS_AGENT_RATE_PER_SECOND": "0",
                                        "CS_SHUTDOWN_GRACE": str(GRACE)})
    proc.env["CS_DATABASE_URL"] = database_url
    yield proc
    proc.cleanup()


def records(rng: random.Random, name: str) -> list[dict[str, Any]]:
    """50 distinct records that all match the task; long ids and file names make each item line
    a few kilobytes without costing tokens, so the pack outlasts the buffers on the way."""
    return [{"id": f"r{n}-" + "i" * 600, "context": name, "type": "memory", "revision": REV,
             "file": f"f{n}-" + "f" * 600,
             "text": "ledger " + " ".join(rng.choice(WORDS) for _ in range(60)),
             "source": {"context": "", "type": "", "revision": ""}} for n in range(50)]


def seed(http: httpx.Client) -> dict[str, str]:
    """Four collections of alice's and a credential of hers; its bearer header."""
    resp = http.put(f"/v1/namespaces/{WS}/members", headers=ADMIN,
                    json={"subject": {"kind": "user", "name": "alice"}, "role": "owner"})
    assert resp.status_code == 200, resp.text
    rng = random.Random(14)
    for name in ("books-a", "books-b", "books-c", "books-d"):
        resp = http.post("/v1/contexts", headers=ALICE, json={
            "name": name, "namespace": WS, "type": "memory",
            "storage": {"backend": "pvc", "size": "1Gi", "accessMode": "ReadWriteMany"}})
        assert resp.status_code == 201, resp.text
        base = f"/v1/namespaces/{WS}/contexts/{name}"
        resp = http.post(f"{base}/revisions", headers=ALICE, json={
            "id": REV, "createdAt": "2026-05-01T10:00:00Z", "operation": "sync"})
        assert resp.status_code == 201, resp.text
        resp = http.put(f"{base}/query-index", headers=ALICE,
                        json={"revision": REV, "records": records(rng, name)})
        assert resp.status_code == 204, resp.text
    resp = http.post(f"/api/w/{WS}/agent-credentials", headers=ALICE, json={
        "name": "streams", "scopes": ["context:read"], "expiresInDays": 1})
    assert resp.status_code == 201, resp.text
    return {"Authorization": f"Bearer {resp.json()['token']}"}


def pack_size(server: ServerProcess, http: httpx.Client, bearer: dict[str, str]) -> int:
    """The size of the whole pack, once the views serve it."""
    server.wait_until(lambda: http.post(PACKS, headers=bearer, json=REQUEST).status_code == 200,
                      120, "never served the pack")
    response = http.post(PACKS, headers=bearer, json=REQUEST)
    assert response.status_code == 200, response.text
    return len(response.content)


class SlowStream:
    """A pack stream read over a socket with a small receive window and segment size, set before
    it connects (as the service then sees it): the service's writes soon wait for this reader."""

    def __init__(self, server: ServerProcess, bearer: dict[str, str]) -> None:
        self.sock = socket.socket()
        for option in SLOW_READER:
            self.sock.setsockopt(*option)
        self.sock.settimeout(60)
        self.sock.connect(("127.0.0.1", server.port))
        body = json.dumps(REQUEST).encode()
        head = (f"POST {PACKS}/stream HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                f"Authorization: {bearer['Authorization']}\r\n"
                f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n")
        self.sock.sendall(head.encode() + body)
        self.reader = self.sock.makefile("rb")
        self.status = int(self.reader.readline().split()[1])
        while self.reader.readline() not in (b"\r\n", b""):
            pass  # the headers: the body is chunked

    def lines(self) -> Iterator[str]:
        """The body's lines as they come; ``<broken>`` when it ends before its last chunk."""
        pending = b""
        while True:
            try:
                size = self.reader.readline()
                chunk = self.reader.read(int(size, 16) + 2) if size.strip() else b""
            except OSError:  # reset
                chunk = b""
            if not chunk.endswith(b"\r\n"):
                yield "<broken>"
                return
            if chunk == b"\r\n":  # the last chunk
                return
            *whole, pending = (pending + chunk[:-2]).split(b"\n")
            yield from (line.decode() for line in whole)

    def close(self) -> None:
        self.reader.close()
        self.sock.close()


def drain_record(server: ServerProcess, step: str) -> dict[str, Any] | None:
    found = [r for r in server.log_records() if r.get("step") == step]
    return found[0] if found else None


def until(check: Callable[[], bool], bound: float = 60.0) -> None:
    deadline = time.monotonic() + bound
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def test_a_stream_cut_by_the_shutdown_ends_with_the_error_line(
        server: ServerProcess, data_dir: Path) -> None:
    server.start()
    with server.client() as http:
        bearer = seed(http)
        assert pack_size(server, http, bearer) > 400_000  # far more than the buffers take
    stream = SlowStream(server, bearer)
    try:
        assert stream.status == 200
        lines = stream.lines()
        header = next(lines)
        assert json.loads(header)["type"] == "header"

        proc = server.proc
        assert proc is not None
        proc.send_signal(signal.SIGTERM)
        until(lambda: drain_record(server, "listener closed") is not None)
        listener = drain_record(server, "listener closed")
        assert listener is not None and listener["in_flight"] == 1  # still being written
        # the grace is over (or, cut off, the process ended): the reader reads on
        until(lambda: drain_record(server, "grace over") is not None or proc.poll() is not None)
        rest = list(lines)
    finally:
        stream.close()

    assert rest, "nothing came after the first lines"
    assert rest[-1] != "<broken>", rest[-3:]
    assert json.loads(rest[-1]) == ERROR_LINE
    assert all(json.loads(line)["type"] == "item" for line in rest[:-1])  # no footer
    typed = PackStream(iter([header, *rest]), lambda: None)  # the typed client's reading
    with pytest.raises(StreamFailed) as failed:
        list(typed)
    assert (failed.value.status, failed.value.code, failed.value.message) == (
        200, "INTERNAL_ERROR", SHUTTING_DOWN)
    with pytest.raises(click.ClickException, match="the stream failed: the service is "):
        from_stream("\n".join([header, *rest]).encode())

    assert proc.wait(30) == 0, server.log_text()[-3000:]
    assert await_no_processes(data_dir, timeout=2) == []
    grace = drain_record(server, "grace over")
    assert grace is not None
    assert (grace["answered_unavailable"], grace["streams_ended"]) == (0, 1)

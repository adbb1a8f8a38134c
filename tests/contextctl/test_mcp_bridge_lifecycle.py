"""``contextctl mcp`` stopped by the agent host that launched it, at any moment: stdin closed
while a call is in flight, SIGTERM or SIGINT at idle or during a call, stdout closed while it
answers. Each time it exits promptly (long before its HTTP client's timeout), with exit code 0
(what ``context-service serve`` and its workers exit with after a stop signal), no traceback,
only whole JSON lines on stdout, and the request in flight given up (the service sees its
connection closed). A service not there at start, or gone mid-session (the real service behind
an address that stops answering), makes a call a tool error naming the service's URL, answered
within the bridge's bound; the bridge goes on serving."""

from __future__ import annotations

import contextlib
import json
import queue
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from context_service.contextctl import mcp_bridge
from tests.contextctl.conftest import MCP_COMMAND, bridge_environment
from tests.e2e.server import ServerProcess
from tests.support.peer_sockets import closed_by_peer

HANDSHAKE = "2025-11-25"
TOKEN = "bdk_0123456789abcdef_" + "A" * 43
PROMPTLY = 10.0  # seconds: the bridge's stop, far below the client's 60 s timeout
CALL = {"name": "list_context_sets", "arguments": {}}
WORKSPACE = "bridge-lifecycle"
ADMIN = "service:context-service-admin"


class Bridge:
    """``contextctl mcp`` launched with ``CS_URL`` ``url``: its stdout lines and its stderr
    collected as they come (stdout read by the caller itself where it is to close it: a reader
    thread blocked on it would hold it open)."""

    def __init__(self, url: str, token: str = TOKEN, reading: bool = True) -> None:
        self.process = subprocess.Popen(
            MCP_COMMAND, env=bridge_environment(url, token),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.lines: queue.Queue[bytes] = queue.Queue()
        self.raw: list[bytes] = []  # every stdout line as read, a partial last one included
        self.errors: list[bytes] = []
        self.reading = reading
        self.readers = [threading.Thread(target=self._read, daemon=True),
                        threading.Thread(target=self._read_errors, daemon=True)]
        if not reading:
            self.readers.pop(0)
        for reader in self.readers:
            reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        with contextlib.suppress(ValueError, OSError):  # closed by a test
            for line in self.process.stdout:
                self.raw.append(line)
                self.lines.put(line)

    def _read_errors(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.errors.append(line)

    def write(self, message: Any) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message).encode() + b"\n")
        self.process.stdin.flush()

    def answer(self, timeout: float = 30) -> Any:
        if not self.reading:
            assert self.process.stdout is not None
            return json.loads(self.process.stdout.readline())
        try:
            return json.loads(self.lines.get(timeout=timeout))
        except queue.Empty:
            raise AssertionError("no answer") from None

    def request(self, request_id: str, method: str, params: Any = None,
                timeout: float = 30) -> Any:
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        self.write(message)
        answer = self.answer(timeout)
        assert answer["id"] == request_id, answer
        return answer

    def initialize(self) -> None:
        self.request("init", "initialize", {"protocolVersion": HANDSHAKE, "capabilities": {},
                                            "clientInfo": {"name": "agent", "version": "1"}})
        self.write({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def exit_code(self, within: float) -> int | None:
        """The exit code once it ended, None if it did not within ``within`` s."""
        try:
            return self.process.wait(within)
        except subprocess.TimeoutExpired:
            return None

    def stderr(self) -> str:
        self.readers[-1].join(5)
        return b"".join(self.errors).decode(errors="replace")

    def assert_whole_lines(self) -> None:
        """Every line it wrote is one whole JSON message ending with its newline."""
        self.readers[0].join(5)
        for line in self.raw:
            assert line.endswith(b"\n"), f"a partial line on stdout: {line!r}"
            json.loads(line)

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)
        for stream in (self.process.stdin, self.process.stdout, self.process.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()


@contextlib.contextmanager
def launched(url: str, token: str = TOKEN, reading: bool = True) -> Iterator[Bridge]:
    bridge = Bridge(url, token, reading)
    try:
        yield bridge
    finally:
        bridge.close()



def _call_in_flight(bridge: Bridge, accepted: list[socket.socket]) -> socket.socket:
    """A tool call sent, once the service holds its request (and will never answer it)."""
    bridge.initialize()
    bridge.write({"jsonrpc": "2.0", "id": "call", "method": "tools/call", "params": CALL})
    deadline = time.monotonic() + 30
    while not accepted and time.monotonic() < deadline:
        time.sleep(0.05)
    assert accepted, "the call never reached the service"
    return accepted[0]




def _no_traceback(stderr: str) -> None:
    assert "Traceback" not in stderr and "Error" not in stderr, stderr


def test_stdin_closed_during_a_call_ends_it_promptly(
        silent_service: tuple[str, list[socket.socket]]) -> None:
    """The MCP stdio shutdown: the host closes stdin. The call in flight is given up, not
    waited for to the client's timeout; nothing on stderr, no partial line on stdout."""
    url, accepted = silent_service
    with launched(url) as bridge:
        held = _call_in_flight(bridge, accepted)
        assert bridge.process.stdin is not None
        bridge.process.stdin.close()
        assert bridge.exit_code(PROMPTLY) == 0
        assert closed_by_peer(held, 5), "the request went on after the bridge ended"
        assert bridge.stderr() == ""
        bridge.assert_whole_lines()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_stop_signal_at_idle_ends_it_cleanly(
        silent_service: tuple[str, list[socket.socket]], sig: signal.Signals) -> None:
    """Stdin left open by the host (a signal, not the end of input, stops it): exit 0 as the
    service's own processes, nothing on stderr."""
    url, _ = silent_service
    with launched(url) as bridge:
        bridge.initialize()
        bridge.process.send_signal(sig)
        assert bridge.exit_code(PROMPTLY) == 0
        assert bridge.stderr() == ""
        bridge.assert_whole_lines()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_stop_signal_during_a_call_gives_the_call_up(
        silent_service: tuple[str, list[socket.socket]], sig: signal.Signals) -> None:
    """The request in flight is cancelled (the service sees its connection closed), the
    process ends at once with exit 0, and stdout holds whole lines only."""
    url, accepted = silent_service
    with launched(url) as bridge:
        held = _call_in_flight(bridge, accepted)
        bridge.process.send_signal(sig)
        assert bridge.exit_code(PROMPTLY) == 0
        assert closed_by_peer(held, 5), "the request went on after the stop signal"
        stderr = bridge.stderr()
        _no_traceback(stderr)
        assert stderr == ""
        bridge.assert_whole_lines()


def _catches(pid: int, sig: signal.Signals) -> bool:
    """Whether process ``pid`` has a handler of its own for ``sig`` (``SigCgt``)."""
    with open(f"/proc/{pid}/status") as status:
        caught = next(line for line in status if line.startswith("SigCgt:"))
    return bool(int(caught.split()[1], 16) >> (sig - 1) & 1)


def test_a_stop_signal_during_start_up_ends_it_cleanly(
        silent_service: tuple[str, list[socket.socket]]) -> None:
    """A signal as soon as the command catches it, the MCP SDK still importing (about half a
    second), the server not started: it ends the same way, nothing served."""
    url, _ = silent_service
    with launched(url) as bridge:
        deadline = time.monotonic() + 30
        while not _catches(bridge.process.pid, signal.SIGTERM):
            assert time.monotonic() < deadline and bridge.process.poll() is None
            time.sleep(0.005)
        bridge.process.send_signal(signal.SIGTERM)
        assert bridge.exit_code(PROMPTLY) == 0
        assert bridge.stderr() == ""
        bridge.assert_whole_lines()
        assert bridge.raw == []


def test_stdout_closed_by_the_host_ends_it_without_a_traceback(
        silent_service: tuple[str, list[socket.socket]]) -> None:
    """An answer written to a stdout no one reads (EPIPE): nothing more can be answered, so the
    session is over, as at the end of stdin, though stdin stays open."""
    url, _ = silent_service
    with launched(url, reading=False) as bridge:
        bridge.initialize()
        assert bridge.process.stdout is not None
        bridge.process.stdout.close()
        bridge.write({"jsonrpc": "2.0", "id": "lost", "method": "ping"})
        assert bridge.exit_code(PROMPTLY) == 0
        stderr = bridge.stderr()
        _no_traceback(stderr)
        assert stderr == ""


def _refused_address() -> str:
    """An address nothing listens on (a port just freed)."""
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def _tool_error(answer: Any) -> dict[str, Any]:
    assert "result" in answer, answer
    result = answer["result"]
    assert result["isError"] is True, result
    content: dict[str, Any] = result["structuredContent"]
    return content


def _timed_call(bridge: Bridge, request_id: str) -> tuple[Any, float]:
    started = time.monotonic()
    answer = bridge.request(request_id, "tools/call", CALL, timeout=120)
    return answer, time.monotonic() - started


def test_a_service_not_there_at_start_is_named_in_each_call() -> None:
    """Connection refused: each call is a tool error ``UNREACHABLE`` naming ``CS_URL`` (the
    agent sees which service, its user which setting to fix), answered after the client's
    few tries, and the bridge goes on serving."""
    url = _refused_address()
    with launched(url) as bridge:
        bridge.initialize()
        for request_id in ("first", "second"):
            answer, took = _timed_call(bridge, request_id)
            error = _tool_error(answer)
            assert error["code"] == "UNREACHABLE" and url in error["message"], error
            assert took < PROMPTLY, took
        assert bridge.request("ping", "ping")["result"] == {}
        bridge.process.stdin.close()  # type: ignore[union-attr]
        assert bridge.exit_code(PROMPTLY) == 0


@pytest.fixture
def black_hole() -> Iterator[str]:
    """An address whose connections are never accepted: a listener whose backlog is full, so
    the kernel drops further SYNs and a connect waits (a host behind a firewall that drops)."""
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(0)
    address = server.getsockname()
    fillers = []
    for _ in range(4):  # fill the accept queue; later ones wait in SYN_SENT themselves
        filler = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        filler.setblocking(False)
        with contextlib.suppress(BlockingIOError):
            filler.connect(address)
        fillers.append(filler)
    time.sleep(0.3)
    probe = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    probe.settimeout(1.5)
    try:
        probe.connect(address)
    except TimeoutError:
        pass  # the address is a black hole, as wanted
    else:
        pytest.fail("the kernel accepted a connection past a full backlog")
    finally:
        probe.close()
    try:
        yield f"http://{address[0]}:{address[1]}"
    finally:
        for filler in fillers:
            filler.close()
        server.close()


@pytest.mark.slow
def test_a_service_that_never_accepts_does_not_hold_a_call_for_minutes(black_hole: str) -> None:
    """A connection never made (a firewall that drops, a host gone): the call is a tool error
    naming the URL within the bridge's connect bound and the client's tries, not after the
    client's 60 s timeout four times over; the listing falls back to the own catalogue as
    soon."""
    with launched(black_hole) as bridge:
        bridge.initialize()
        answer, took = _timed_call(bridge, "call")
        error = _tool_error(answer)
        assert error["code"] == "UNREACHABLE" and black_hole in error["message"], error
        bound = mcp_bridge.CONNECT_WITHIN
        tries = 4  # the client's: a connection never made is tried again
        assert took < tries * bound + PROMPTLY, took
        started = time.monotonic()
        listing = bridge.request("list", "tools/list", timeout=120)
        assert listing["result"]["tools"], listing
        assert time.monotonic() - started < bound + PROMPTLY


class Relay:
    """A TCP relay to the real service at ``target``: the bridge's ``CS_URL`` is the relay's,
    and ``stop`` takes the service away (the listener and every connection closed)."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.server = socket.create_server(("127.0.0.1", 0))
        self.server.settimeout(0.2)
        self.url = f"http://127.0.0.1:{self.server.getsockname()[1]}"
        self.sockets: list[socket.socket] = []
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self) -> None:
        while not self.stopped.is_set():
            try:
                client = self.server.accept()[0]
            except TimeoutError:
                continue
            except OSError:
                return
            upstream = socket.create_connection(self.target)
            self.sockets += [client, upstream]
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(source, sink), daemon=True).start()

    @staticmethod
    def _pipe(source: socket.socket, sink: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := source.recv(65536):
                sink.sendall(data)
        with contextlib.suppress(OSError):
            sink.shutdown(socket.SHUT_WR)

    def stop(self) -> None:
        self.stopped.set()
        self.thread.join(5)
        self.server.close()
        for connection in self.sockets:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)
            connection.close()


@pytest.fixture(scope="module")
def bearer(service: ServerProcess) -> str:
    """An agent credential of a workspace of this module's own."""
    with httpx.Client(base_url=service.url, timeout=30) as http:
        owner = {"subject": {"kind": "user", "name": "alice"}, "role": "owner"}
        done = http.put(f"/v1/namespaces/{WORKSPACE}/members", json=owner,
                        headers={"X-Context-Subject": ADMIN})
        assert done.status_code == 200, done.text
        done = http.post(f"/api/w/{WORKSPACE}/agent-credentials",
                         headers={"X-Context-Subject": "user:alice"},
                         json={"name": "agent", "scopes": ["context:read"], "expiresInDays": 30})
        assert done.status_code == 201, done.text
        token: str = done.json()["token"]
        return token


@pytest.mark.e2e
@pytest.mark.postgres
def test_the_service_going_away_mid_session(service: ServerProcess, bearer: str) -> None:
    """Against the real service: a call answered, then the service gone (its address closed,
    its connections cut): the next calls are tool errors naming the URL, each within the
    bound, ``ping`` still answered, and a clean end at the end of stdin."""
    relay = Relay(("127.0.0.1", service.port))
    try:
        with launched(relay.url, bearer) as bridge:
            bridge.initialize()
            answer, _ = _timed_call(bridge, "before")
            assert answer["result"]["isError"] is False, answer
            relay.stop()
            for request_id in ("after", "again"):
                answer, took = _timed_call(bridge, request_id)
                error = _tool_error(answer)
                assert error["code"] == "UNREACHABLE" and relay.url in error["message"], error
                assert took < PROMPTLY, took
            assert bridge.request("ping", "ping")["result"] == {}
            bridge.process.stdin.close()  # type: ignore[union-attr]
            assert bridge.exit_code(PROMPTLY) == 0
            assert bridge.stderr() == ""
    finally:
        if not relay.stopped.is_set():
            relay.stop()

"""``contextctl mcp`` whose stdout is a socket the host resets (a host that talks to it over a
connection and drops it: a crash, SO_LINGER 0). Writing an answer then fails with
``ConnectionResetError`` (ECONNRESET), not the ``BrokenPipeError`` of a closed pipe: the bridge
ended with a traceback and exit 1 where a closed pipe ends it with exit 0 and nothing on stderr.
Either way nothing more can be answered and the session is over, the same way."""

from __future__ import annotations

import contextlib
import json
import socket
import struct
import subprocess
from collections.abc import Iterator
from typing import Any

from tests.contextctl.conftest import MCP_COMMAND, bridge_environment

HANDSHAKE = "2025-11-25"
TOKEN = "bdk_0123456789abcdef_" + "A" * 43
PROMPTLY = 10.0  # seconds: far below the client's 60 s timeout


def _connected_pair() -> tuple[socket.socket, socket.socket]:
    """Two ends of one TCP connection on the loopback: a reset is TCP's (a Unix socket's peer
    gone is EPIPE on write)."""
    with socket.create_server(("127.0.0.1", 0)) as server:
        near = socket.create_connection(server.getsockname())
        far, _ = server.accept()
    return near, far


@contextlib.contextmanager
def bridge_on_socket(url: str, both: bool = False
                     ) -> Iterator[tuple[subprocess.Popen[bytes], socket.socket]]:
    """The bridge with ``CS_URL`` ``url``, its stdout one end of a TCP connection (its stdin
    too where ``both``, as a host that talks to it over one connection); yields the process
    and the host's end."""
    near, far = _connected_pair()
    process = subprocess.Popen(MCP_COMMAND, env=bridge_environment(url, TOKEN),
                               stdin=near.fileno() if both else subprocess.PIPE,
                               stdout=near.fileno(), stderr=subprocess.PIPE)
    near.close()  # the child holds its own
    try:
        yield process, far
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(10)
        for stream in (process.stdin, process.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        far.close()


def _write(process: subprocess.Popen[bytes], message: Any) -> None:
    assert process.stdin is not None
    process.stdin.write(json.dumps(message).encode() + b"\n")
    process.stdin.flush()


def _ended_cleanly(process: subprocess.Popen[bytes]) -> None:
    """Exit 0 promptly, nothing on stderr (a traceback least of all)."""
    try:
        code = process.wait(PROMPTLY)
    except subprocess.TimeoutExpired:
        code = None
    assert process.stderr is not None
    stderr = process.stderr.read().decode(errors="replace") if code is not None else ""
    assert code == 0, stderr
    assert "Traceback" not in stderr and "Error" not in stderr, stderr
    assert stderr == ""


def _reset(far: socket.socket) -> None:
    """The host's end closed with SO_LINGER 0: an RST, not a FIN."""
    far.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    far.close()


def test_stdout_reset_by_the_host_ends_it_as_a_closed_one_does(
        silent_service: tuple[str, list[socket.socket]]) -> None:
    url, _ = silent_service
    with bridge_on_socket(url) as (process, far):
        _write(process, {"jsonrpc": "2.0", "id": "init", "method": "initialize",
                         "params": {"protocolVersion": HANDSHAKE, "capabilities": {},
                                    "clientInfo": {"name": "agent", "version": "1"}}})
        far.settimeout(30)
        answer = json.loads(far.makefile("rb").readline())
        assert answer["id"] == "init", answer
        _write(process, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        _reset(far)
        _write(process, {"jsonrpc": "2.0", "id": "lost", "method": "ping"})
        _ended_cleanly(process)


def test_one_connection_for_stdin_and_stdout_reset_at_idle_ends_it_cleanly(
        silent_service: tuple[str, list[socket.socket]]) -> None:
    """A host that talks to the bridge over one connection and resets it while the bridge
    waits for a request: the read is what fails (ECONNRESET), as the end of its input."""
    url, _ = silent_service
    with bridge_on_socket(url, both=True) as (process, far):
        far.sendall(json.dumps({"jsonrpc": "2.0", "id": "init", "method": "initialize",
                                "params": {"protocolVersion": HANDSHAKE, "capabilities": {},
                                           "clientInfo": {"name": "agent", "version": "1"}}}
                               ).encode() + b"\n")
        far.settimeout(30)
        answer = json.loads(far.makefile("rb").readline())
        assert answer["id"] == "init", answer
        _reset(far)
        _ended_cleanly(process)

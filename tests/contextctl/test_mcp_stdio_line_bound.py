"""``contextctl mcp`` reads a line of its stdin up to the service's request body limit: a
longer line (one message, or one batch) is answered as a message that cannot be read (-32600,
``id`` null, a message naming the bound) without being held, and the next line is read as
usual. Before, a line was held whole before anything was checked: a 64 MiB line raised the
bridge's peak by more than its size, and a line of gigabytes could exhaust the memory."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.contextctl.test_mcp_bridge_protocol_stdio import HANDSHAKE, Stdio
from tests.contextctl.test_mcp_bridge_protocol_stdio import bridge as bridge  # the fixture

INVALID_REQUEST = -32600
LIMIT = 1024 * 1024  # the service's request body limit, in bytes
MiB = 1024 * 1024


def _ping(size: int, fill: str = "a", request_id: str = "big") -> str:
    """A ``ping`` whose line is ``size`` bytes of UTF-8 (``fill`` of one or two bytes)."""
    head = f'{{"jsonrpc":"2.0","id":"{request_id}","method":"ping","params":{{"pad":"'
    tail = '"}}'
    room = size - len(head.encode()) - len(tail.encode())
    width = len(fill.encode())
    line = head + fill * (room // width) + "a" * (room % width) + tail
    assert len(line.encode()) == size
    return line


def _peak(bridge: Stdio) -> int:
    """The bridge's peak resident memory so far, in bytes (Linux's ``VmHWM``)."""
    status = Path(f"/proc/{bridge.process.pid}/status").read_text()
    (kib,) = (line.split()[1] for line in status.splitlines() if line.startswith("VmHWM:"))
    return int(kib) * 1024


def _over_long(answers: list[object]) -> None:
    assert len(answers) == 1, str(answers)[:500]
    (answer,) = answers
    assert isinstance(answer, dict)
    assert answer["jsonrpc"] == "2.0" and answer["id"] is None and "result" not in answer
    assert answer["error"]["code"] == INVALID_REQUEST, answer
    assert f"{LIMIT} bytes" in answer["error"]["message"], answer  # the bound, named
    assert len(json.dumps(answer)) < 300  # the line is not echoed


def test_a_line_past_the_bound_is_refused_unheld_and_the_next_is_answered(
        bridge: Stdio) -> None:
    bridge.initialize(HANDSHAKE)
    before = _peak(bridge)
    _over_long(bridge.ask(_ping(64 * MiB)))  # ask: the next line (a ping) is answered too
    assert _peak(bridge) - before < 16 * MiB  # a bounded line, not the 64 MiB one


@pytest.mark.parametrize(("size", "fill"), [(LIMIT + 1, "a"), (LIMIT + 2, "\u00e9")])
def test_the_bound_is_the_service_body_limit_in_bytes(bridge: Stdio, size: int,
                                                      fill: str) -> None:
    """One byte past it is refused, counted in UTF-8 bytes (a line of two-byte characters
    fewer than the limit is still past it)."""
    bridge.initialize(HANDSHAKE)
    _over_long(bridge.ask(_ping(size, fill)))


@pytest.mark.parametrize("fill", ["a", "\u00e9"])
def test_a_line_of_the_limit_exactly_is_read(bridge: Stdio, fill: str) -> None:
    bridge.initialize(HANDSHAKE)
    answers = bridge.ask(_ping(LIMIT, fill))
    assert answers == [{"jsonrpc": "2.0", "id": "big", "result": {}}], str(answers)[:500]


def test_an_over_long_last_line_without_a_newline_is_refused(bridge: Stdio) -> None:
    bridge.initialize(HANDSHAKE)
    assert bridge.process.stdin is not None
    bridge.process.stdin.write(_ping(LIMIT + 1).encode())
    bridge.process.stdin.close()
    answer = bridge.answer()
    _over_long([answer])

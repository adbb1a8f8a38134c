"""``contextctl mcp`` measures a stdin line against the service's body limit in the bytes it
was sent in. Bytes that are not UTF-8 have always been read as U+FFFD (three bytes in UTF-8),
so a line of 400 KB holding such bytes was measured as 1.2 MB and refused as longer than
1,048,576 bytes, while the same message with a few of them is answered."""

from __future__ import annotations

from tests.contextctl.test_mcp_bridge_protocol_stdio import HANDSHAKE, Stdio
from tests.contextctl.test_mcp_bridge_protocol_stdio import bridge as bridge  # the fixture

PONG = [{"jsonrpc": "2.0", "id": "raw", "result": {}}]


def _ping(pad: bytes) -> bytes:
    return b'{"jsonrpc":"2.0","id":"raw","method":"ping","params":{"pad":"' + pad + b'"}}'


def test_a_few_bytes_not_utf8_are_read_as_before(bridge: Stdio) -> None:
    bridge.initialize(HANDSHAKE)
    assert bridge.ask(_ping(b"\xff" * 10)) == PONG


def test_a_line_within_the_limit_in_bytes_is_answered_whatever_its_bytes(
        bridge: Stdio) -> None:
    bridge.initialize(HANDSHAKE)
    line = _ping(b"\xff" * 400_000)
    assert len(line) < 1024 * 1024
    answers = bridge.ask(line)
    assert answers == PONG, str(answers)[:300]

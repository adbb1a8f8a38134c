"""``contextctl mcp`` on its own stdio against the MCP specification's JSON-RPC rules, a line
written and the lines answered read back: a line that is no JSON is a parse error, a message
that is no request (an id MCP does not allow, another ``jsonrpc``, a method or params of the
wrong type) an invalid request, each answered with ``id`` null where the SDK's stdio transport
dropped it (the client waited for ever); a batch is answered where the negotiated protocol has
batches (2025-03-26) and is an invalid request where it has none; notifications are never
answered; ``ping`` is, before ``initialize`` too; an unsupported ``initialize`` version is
answered with the newest the bridge speaks; a cancelled call stops and is never answered. The
service is not there (its own catalogue stands) or, for the cancellation, never answers."""

from __future__ import annotations

import json
import queue
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.contextctl.conftest import MCP_COMMAND, bridge_environment
from tests.support.peer_sockets import closed_by_peer

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
HANDSHAKE = "2025-11-25"
TOKEN = "bdk_0123456789abcdef_" + "A" * 43


class Stdio:
    """``contextctl mcp`` launched with ``CS_URL`` ``url``: lines written to its stdin, the lines
    of its stdout read back."""

    def __init__(self, url: str) -> None:
        self.process = subprocess.Popen(
            MCP_COMMAND, env=bridge_environment(url, TOKEN),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.lines: queue.Queue[bytes] = queue.Queue()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line)

    def write(self, line: str | bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write((line.encode() if isinstance(line, str) else line) + b"\n")
        self.process.stdin.flush()

    def answer(self, timeout: float = 30) -> Any:
        """The next line of stdout, read as JSON (every line must be JSON)."""
        try:
            return json.loads(self.lines.get(timeout=timeout))
        except queue.Empty:
            raise AssertionError("no answer") from None

    def ask(self, line: str | bytes) -> Any:
        """``line`` written, then a ``ping``: the answers before the ping's (none where the line
        is owed none: the bridge answers in order what it answers at once)."""
        self.write(line)
        self.write('{"jsonrpc":"2.0","id":"after","method":"ping"}')
        answers = []
        while (answer := self.answer()) != {"jsonrpc": "2.0", "id": "after", "result": {}}:
            answers.append(answer)
        return answers

    def initialize(self, version: str) -> Any:
        self.write(json.dumps({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {
            "protocolVersion": version, "capabilities": {},
            "clientInfo": {"name": "agent", "version": "1"}}}))
        answer = self.answer()
        self.write('{"jsonrpc":"2.0","method":"notifications/initialized"}')
        return answer

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        try:
            self.process.wait(20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(5)
        self.reader.join(5)
        assert self.process.stdout is not None
        self.process.stdout.close()


@pytest.fixture
def bridge() -> Iterator[Stdio]:
    """The bridge with no service at ``CS_URL``: the framing needs none."""
    stdio = Stdio("http://127.0.0.1:9")
    try:
        yield stdio
    finally:
        stdio.close()


def _refusal(answers: list[Any], code: int) -> None:
    assert len(answers) == 1, answers
    (answer,) = answers
    assert answer["jsonrpc"] == "2.0" and answer["id"] is None and "result" not in answer, answer
    assert answer["error"]["code"] == code and answer["error"]["message"], answer


def test_a_line_that_is_no_json_is_a_parse_error(bridge: Stdio) -> None:
    for line in ('{"jsonrpc":', "not json", '{"jsonrpc":"2.0","id":1,"method":"ping"'):
        _refusal(bridge.ask(line), PARSE_ERROR)


# ids MCP does not allow (a string or an integer, never null)
NOT_AN_ID = ["null", "1.5", "true", '{"a":1}', "[1]", "1e400", "1.0"]


@pytest.mark.parametrize("line", [
    *(f'{{"jsonrpc":"2.0","id":{i},"method":"ping"}}' for i in NOT_AN_ID),
    '{"jsonrpc":"1.0","id":1,"method":"ping"}',
    '{"id":1,"method":"ping"}',
    '{"jsonrpc":"2.0","id":1,"method":5}',
    '{"jsonrpc":"2.0","id":1,"method":"tools/list","params":[1]}',
    '{"jsonrpc":"2.0","method":"notifications/cancelled","params":5}',
    '{"jsonrpc":"2.0","id":1}',
    "5", '"ping"', "{}",
])
def test_a_message_that_is_no_request_is_an_invalid_request(bridge: Stdio, line: str) -> None:
    """JSON-RPC's answer to an invalid request, with ``id`` null: it was dropped, and a client
    whose request the bridge could not read waited for an answer that never came."""
    bridge.initialize(HANDSHAKE)
    _refusal(bridge.ask(line), INVALID_REQUEST)


def test_ids_of_either_allowed_type_come_back_as_sent(bridge: Stdio) -> None:
    for request_id in ['"s"', '""', "0", "-1", str(2**70)]:
        answers = bridge.ask(f'{{"jsonrpc":"2.0","id":{request_id},"method":"ping"}}')
        assert answers == [{"jsonrpc": "2.0", "id": json.loads(request_id), "result": {}}]


def test_a_batch_is_answered_where_the_protocol_has_batches(bridge: Stdio) -> None:
    """2025-03-26: "MUST support receiving JSON-RPC batches": one array of the answers owed (a
    notification owes none, an invalid member is answered as such); a batch of notifications
    only is owed nothing; an empty batch is an invalid request."""
    assert bridge.initialize("2025-03-26")["result"]["protocolVersion"] == "2025-03-26"
    answers = bridge.ask(json.dumps([
        {"jsonrpc": "2.0", "id": 1, "method": "ping"},
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 9}},
        {"jsonrpc": "2.0", "id": "two", "method": "no/such_method"},
        {"jsonrpc": "2.0", "id": 1.5, "method": "ping"}]))
    assert len(answers) == 1 and isinstance(answers[0], list), answers
    by_id = {json.dumps(a["id"]): a for a in answers[0]}
    assert set(by_id) == {"1", '"two"', "null"}, answers
    assert by_id["1"]["result"] == {}
    assert by_id['"two"']["error"]["code"] == -32601
    assert by_id["null"]["error"]["code"] == INVALID_REQUEST
    assert bridge.ask('[{"jsonrpc":"2.0","method":"notifications/cancelled",'
                      '"params":{"requestId":9}}]') == []
    _refusal(bridge.ask("[]"), INVALID_REQUEST)


@pytest.mark.parametrize("version", [None, HANDSHAKE, "2025-06-18"])
def test_a_batch_is_an_invalid_request_where_the_protocol_has_none(bridge: Stdio,
                                                                   version: str | None) -> None:
    """Before ``initialize`` (which is never part of a batch) and on protocols after 2025-03-26
    a batch is JSON-RPC's invalid request, answered once, its members not run."""
    if version is not None:
        bridge.initialize(version)
    _refusal(bridge.ask('[{"jsonrpc":"2.0","id":1,"method":"ping"}]'), INVALID_REQUEST)


def test_notifications_get_no_answer(bridge: Stdio) -> None:
    bridge.initialize(HANDSHAKE)
    for notification in [
        '{"jsonrpc":"2.0","method":"notifications/no_such_thing"}',
        '{"jsonrpc":"2.0","method":"tools/list"}',
        '{"jsonrpc":"2.0","method":"tools/call","params":{"name":"list_fields"}}',
        '{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":{}}}',
        '{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":77}}',
        '{"jsonrpc":"2.0","id":5,"result":{}}',  # a response to no request of the bridge's
    ]:
        assert bridge.ask(notification) == [], notification


def test_before_initialize_only_ping_is_served(bridge: Stdio) -> None:
    """A request before the handshake (the client SHOULD NOT) is answered, as an error: never
    left unanswered, never served; ``ping`` is."""
    (listing,) = bridge.ask('{"jsonrpc":"2.0","id":1,"method":"tools/list"}')
    assert listing["id"] == 1 and "result" not in listing and listing["error"]["code"] < 0
    assert bridge.ask('{"jsonrpc":"2.0","id":2,"method":"ping"}') == [
        {"jsonrpc": "2.0", "id": 2, "result": {}}]


@pytest.mark.parametrize(("asked", "answered"), [
    ("2025-03-26", "2025-03-26"), (HANDSHAKE, HANDSHAKE), ("1999-01-01", HANDSHAKE),
    ("2026-07-28", HANDSHAKE)])
def test_initialize_answers_the_version_asked_or_the_newest_it_speaks(
        bridge: Stdio, asked: str, answered: str) -> None:
    assert bridge.initialize(asked)["result"]["protocolVersion"] == answered





def _wait_for_the_call(accepted: list[socket.socket]) -> None:
    deadline = time.monotonic() + 30
    while not accepted and time.monotonic() < deadline:
        time.sleep(0.05)
    assert accepted, "the call never reached the service"


def test_a_cancelled_call_stops_and_is_never_answered(
        silent_service: tuple[str, list[socket.socket]]) -> None:
    """``notifications/cancelled`` for a call in progress: the bridge stops it (its request to
    the service is given up) and sends no answer for it; it goes on serving."""
    url, accepted = silent_service
    stdio = Stdio(url)
    try:
        stdio.initialize(HANDSHAKE)
        stdio.write('{"jsonrpc":"2.0","id":"call","method":"tools/call","params":'
                    '{"name":"list_context_sets","arguments":{}}}')
        _wait_for_the_call(accepted)
        stdio.write('{"jsonrpc":"2.0","method":"notifications/cancelled",'
                    '"params":{"requestId":"call","reason":"the user gave up"}}')
        assert closed_by_peer(accepted[0], 10), "the call went on after its cancellation"
        assert stdio.ask('{"jsonrpc":"2.0","id":"next","method":"ping"}') == [
            {"jsonrpc": "2.0", "id": "next", "result": {}}]
        with pytest.raises(AssertionError, match="no answer"):
            stdio.answer(timeout=2)  # nothing ever for the cancelled call
    finally:
        stdio.close()


@pytest.mark.parametrize(("call", "cancelled", "other"), [
    ("slow", "slow", "quick"),
    # the SDK takes an integer id and the same number written as a string for one request (as
    # the TypeScript SDK does): cancelling either stops the call, which it then never answers
    (7, "7", 8),
    ("12", 12, "quick"),
])
def test_a_batch_member_cancelled_leaves_the_rest_of_the_batch_answered(
        silent_service: tuple[str, list[socket.socket]], call: object, cancelled: object,
        other: object) -> None:
    """A member of a batch cancelled while in progress is owed no answer: the batch's answer is
    the others', not held for ever waiting for it."""
    url, accepted = silent_service
    stdio = Stdio(url)
    try:
        stdio.initialize("2025-03-26")
        stdio.write(json.dumps([
            {"jsonrpc": "2.0", "id": call, "method": "tools/call",
             "params": {"name": "list_context_sets", "arguments": {}}},
            {"jsonrpc": "2.0", "id": other, "method": "ping"}]))
        _wait_for_the_call(accepted)
        stdio.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/cancelled",
                                "params": {"requestId": cancelled}}))
        assert stdio.answer(timeout=10) == [{"jsonrpc": "2.0", "id": other, "result": {}}]
        assert closed_by_peer(accepted[0], 10), "the call went on after its cancellation"
    finally:
        stdio.close()

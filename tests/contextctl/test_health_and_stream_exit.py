"""``contextctl`` exit codes where a 200 is not success (docs/contextctl.md, output and exit
codes): ``health`` exits 0 only when ``/healthz`` says the service is healthy (spec 1.3,
``{"status":"ok"}``), and ``agent pack --stream --json`` prints the lines as they came, then
exits 1 when they end in an error line or stop before the footer. A stand-in HTTP server
answers, so the answers can be ones the service only gives when something went wrong."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from tests.contextctl.test_cli_edges import BEARER, Answer, one_line_error, run
from tests.contextctl.test_cli_edges import stand_in as stand_in  # the fixture

StandIn = Callable[[Answer], str]
HEADER = {"type": "header", "packId": "pk_1", "replayId": "rp_1"}
ITEM = {"type": "item", "item": {"kind": "passage", "id": "facts/r1"}}
FOOTER = {"type": "footer", "usedTokens": 12, "complete": True}
FAILED = {"type": "error", "code": "INTERNAL_ERROR", "message": "the pack could not be written"}


def answering(status: int, body: bytes, kind: str = "application/json") -> Answer:
    return lambda _: (status, kind, body)


def ndjson(*lines: dict[str, object]) -> bytes:
    return b"".join(json.dumps(line, separators=(",", ":")).encode() + b"\n" for line in lines)


def test_health_says_ok_when_the_service_says_so(monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str],
                                                stand_in: StandIn) -> None:
    url = stand_in(answering(200, b'{"status":"ok"}'))
    outcome = run(monkeypatch, capsys, url, "health")
    assert (outcome.code, outcome.out, outcome.err) == (0, "ok\n", "")


@pytest.mark.parametrize("body", [b'{"status":"starting"}', b"{}", b'{"status":true}',
                                  b'["ok"]', b'"ok"', b"null"])
def test_health_refuses_a_200_that_does_not_say_healthy(monkeypatch: pytest.MonkeyPatch,
                                                       capsys: pytest.CaptureFixture[str],
                                                       stand_in: StandIn, body: bytes) -> None:
    url = stand_in(answering(200, body))
    outcome = run(monkeypatch, capsys, url, "health")
    err = one_line_error(outcome)
    assert outcome.out == ""
    assert f"the context service at {url} is not healthy: /healthz answered " in err
    assert body.decode() in err


def test_health_refuses_an_answer_that_is_not_json(monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str],
                                                   stand_in: StandIn) -> None:
    url = stand_in(answering(200, b"<html>ok</html>", "text/html"))
    err = one_line_error(run(monkeypatch, capsys, url, "health"))
    assert f"the answer from {url} is not the context service's JSON" in err


def pack_stream_json(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
                     stand_in: StandIn, body: bytes) -> tuple[int, str, str]:
    url = stand_in(answering(200, body, "application/x-ndjson"))
    outcome = run(monkeypatch, capsys, url, "agent", "pack", "a task", "--stream", "--json",
                  CS_AGENT_TOKEN=BEARER)
    return outcome.code, outcome.out, outcome.err


def test_a_stream_ending_in_its_footer_exits_0(monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str],
                                              stand_in: StandIn) -> None:
    body = ndjson(HEADER, ITEM, FOOTER)
    assert pack_stream_json(monkeypatch, capsys, stand_in, body) == (0, body.decode(), "")


def test_a_stream_ending_in_an_error_line_prints_it_and_exits_1(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        stand_in: StandIn) -> None:
    body = ndjson(HEADER, ITEM, FAILED)
    code, out, err = pack_stream_json(monkeypatch, capsys, stand_in, body)
    assert (code, out) == (1, body.decode())
    assert err == "contextctl: the stream failed: the pack could not be written\n"


def test_a_stream_stopping_before_its_footer_exits_1(monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str],
                                                     stand_in: StandIn) -> None:
    body = ndjson(HEADER, ITEM)
    code, out, err = pack_stream_json(monkeypatch, capsys, stand_in, body)
    assert (code, out) == (1, body.decode())
    assert err == "contextctl: the stream ended before its footer\n"

"""``contextctl`` at a terminal when things go wrong, without a service (a stand-in HTTP server,
or nothing listening): a password in ``CS_URL`` is never printed, an answer that is not the
service's JSON is one line and exit 1 (not a traceback), ``history export -f`` fails cleanly
and never truncates or half-writes its file, and ``agent pack`` waits as long as the latency
deadline it asked for."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import msgspec
import pytest

from context_service.contextctl.options import App
from context_service.contextctl.packs import pack
from context_service.contextctl.settings import Settings
from context_service.contract import agent as c
from tests.contextctl.conftest import Cli, Outcome, make_cli

BEARER = "bdk_0123456789abcdef_" + "A" * 43
HASH = "sha256:" + "0" * 64
Answer = Callable[[BaseHTTPRequestHandler], tuple[int, str, bytes]]


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port  # nothing listens there once the socket is closed


@pytest.fixture
def stand_in() -> Iterator[Callable[[Answer], str]]:
    """``stand_in(answer)``: the URL of an HTTP server answering every request with
    ``answer(handler)`` (status, content type, body)."""
    servers: list[ThreadingHTTPServer] = []

    def start(answer: Answer) -> str:
        class Handler(BaseHTTPRequestHandler):
            def reply(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                status, kind, body = answer(self)
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = do_PUT = do_DELETE = reply

            def log_message(self, *_: object) -> None:
                return None

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}"

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def run(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], url: str,
        *args: str, **env: str) -> Outcome:
    cli: Cli = make_cli(url, monkeypatch, capsys)
    return cli(*args, **env)


def one_line_error(outcome: Outcome) -> str:
    assert outcome.code == 1, outcome
    assert outcome.err.startswith("contextctl: ") and outcome.err.count("\n") == 1, outcome.err
    assert "Traceback" not in outcome.err
    return outcome.err


@pytest.mark.parametrize("args", [("ctx", "ls"), ("health",), ("agent", "match", "hi"),
                                  ("agent", "pack", "a task")])
def test_a_password_in_cs_url_is_never_printed(monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str],
                                               args: tuple[str, ...]) -> None:
    """``CS_URL=https://user:password@gateway`` is how some gateways take basic auth: the
    message that the service cannot be reached names the host, never the password."""
    url = f"http://alice:s3cret-pw@127.0.0.1:{closed_port()}"
    err = one_line_error(run(monkeypatch, capsys, url, *args, CS_AGENT_TOKEN=BEARER))
    assert "s3cret-pw" not in err and "alice" not in err
    assert f"cannot reach the context service at http://***@127.0.0.1:{url.rsplit(':', 1)[1]}" \
        in err


@pytest.mark.parametrize("args", [
    ("ctx", "ls"), ("ctx", "ls", "-o", "yaml"), ("ctx", "ls", "--json"), ("ctx", "get", "x"),
    ("ls",), ("wait", "x"),
    ("query", "release"), ("query", "release", "--all"), ("history", "export", "x"),
    ("history", "events", "x", "--all"), ("agent", "match", "hi"), ("agent", "pack", "a task"),
    ("agent", "pack", "a task", "--stream"), ("agent", "pack", "a task", "--stream", "--json"),
    ("agent", "sets", "ls", "--agent")])
def test_an_answer_that_is_not_json_is_one_line(monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str],
                                               stand_in: Callable[[Answer], str],
                                               args: tuple[str, ...]) -> None:
    """``CS_URL`` naming some other web server (a login page of a proxy, a dev server) answers
    200 with HTML: the command says so in one line and exits 1."""
    url = stand_in(lambda _: (200, "text/html", b"<html><body>Sign in</body></html>"))
    err = one_line_error(run(monkeypatch, capsys, url, *args, CS_AGENT_TOKEN=BEARER))
    assert f"the answer from {url} is not the context service's JSON" in err


def test_history_export_into_a_missing_folder(monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str],
                                              tmp_path: Path) -> None:
    target = tmp_path / "no-such-folder" / "events.jsonl"
    url = f"http://127.0.0.1:{closed_port()}"
    err = one_line_error(run(monkeypatch, capsys, url, "history", "export", "x", "-f",
                             str(target)))
    assert str(target) in err and "No such file or directory" in err


def test_a_failed_export_leaves_the_file_as_it_was(monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str],
                                                   stand_in: Callable[[Answer], str],
                                                   tmp_path: Path) -> None:
    """A refusal or a failure after the first page (here: the second page) neither empties a
    previous export nor leaves half of a new one that reads as a whole one."""
    first = msgspec.json.encode({"items": [{"position": 1, "name": "ContextCreated"}],
                                 "nextCursor": "c2"})
    refused = msgspec.json.encode({"error": "forbidden", "message": "not allowed"})

    def answer(handler: BaseHTTPRequestHandler) -> tuple[int, str, bytes]:
        if "cursor=c2" in handler.path:
            return 500, "application/json", msgspec.json.encode(
                {"error": "internal", "message": "internal error (request id r1)"})
        return 200, "application/json", first

    previous = tmp_path / "previous.jsonl"
    previous.write_text("earlier export\n")
    fresh = tmp_path / "fresh.jsonl"
    broken = stand_in(answer)
    forbidding = stand_in(lambda _: (403, "application/json", refused))
    for url, message in ((broken, "internal error (request id r1)"),
                         (forbidding, "not allowed")):
        for target in (previous, fresh):
            outcome = run(monkeypatch, capsys, url, "history", "export", "x", "-f", str(target))
            assert one_line_error(outcome) == f"contextctl: {message}\n"
    assert previous.read_text() == "earlier export\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["previous.jsonl"]


def released_pack() -> bytes:
    none = c.Counted(count=0, ids=[])
    return msgspec.json.encode(c.ContextPack(
        pack_id="pk_" + "0" * 32, replay_id="rp_" + "1" * 32, task="a task",
        as_of=c.PackAsOf(valid_time="2025-01-01T00:00:00Z",
                         system_time="2025-01-01T00:00:00Z", position=1),
        budget=c.PackBudget(max_tokens=4000, used_tokens=0, coverage="best_effort"),
        complete=True, items=[],
        omitted=c.Omitted(budget=none, duplicate=none, access=c.Counted(count=0)),
        missing=[], receipt=c.Receipt(algorithm="sha256", merkle_root=HASH, position=1),
        expires_at="2025-02-01T00:00:00Z"))


def test_pack_waits_as_long_as_its_latency_deadline(
        stand_in: Callable[[Answer], str], capsys: pytest.CaptureFixture[str]) -> None:
    """``--max-latency-ms`` goes up to 60,000, and the service may take that long before it
    answers: the command's own time limit is never shorter than the deadline it asked for
    (here the client's own limit is 0.3 s, and the service answers after 1.2 s of a 1 s
    deadline)."""
    body = released_pack()

    def slow(_: BaseHTTPRequestHandler) -> tuple[int, str, bytes]:
        time.sleep(1.2)
        return 200, "application/json", body

    url = stand_in(slow)
    app = App(Settings(url=url, agent_token=BEARER, timeout=0.3))
    capsys.readouterr()
    pack.main(["a task", "--max-latency-ms", "1000", "--json"], obj=app, standalone_mode=False)
    assert capsys.readouterr().out == body.decode() + "\n"

"""``contextctl history audit --all`` (and ``events --all``): pages of ``limit=1000`` asked for,
never one answer as long as the history; ``--json`` and ``-o yaml`` written as the pages
arrive; every format in the bytes the one object holding every item had; the client's memory
that of a page, not of the history.

httpx's mock transport stands in for the service: a history of generated events answered as
the service pages it (``limit`` and ``cursor``; without ``limit``, every event in one body)."""

from __future__ import annotations

import hashlib
import io
import json
import sys
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from context_service.contextctl import history, options, output
from context_service.contextctl.client import Client
from context_service.contextctl.main import main
from context_service.contextctl.settings import Settings
from tests.support.memory_cost import peak_memory

URL = "http://service.test"
# names a table pads by display width, or a JSON or YAML document must escape or fold
NAMES = ("plain", 'quo"te', "back\\slash", "gr\u00fc\u00dfe", "tab\there", "\u5bbd\u5b57",
         "long-" + "x" * 90, "")


def audit_event(i: int) -> dict[str, Any]:
    event: dict[str, Any] = {
        "time": f"2026-01-01T00:{i // 60 % 60:02d}:{i % 60:02d}.{i % 997:03d}Z",
        "action": ("grant.set", "grant.revoked", "consumer.attached")[i % 3],
        "subject": {"kind": "user", "name": f"{NAMES[i % len(NAMES)]}{i % 13}"}}
    if i % 5:
        event["target"] = {"kind": "agent", "name": f"{NAMES[(i * 7) % len(NAMES)]}-{i}"}
    return event


def history_event(i: int) -> dict[str, Any]:
    return {"position": 10 * i + 3, "time": f"2026-01-01T00:00:{i % 60:02d}Z",
            "name": ("AccessGranted", "ContextCreated")[i % 2],
            "actor": f"user:{NAMES[i % len(NAMES)]}", "data": {"n": i}}


class Service:
    """A history of ``size`` generated events, paged as the service pages it."""

    def __init__(self, size: int, event: Callable[[int], dict[str, Any]]) -> None:
        self.size, self.event = size, event
        self.asked: list[dict[str, str]] = []
        self.on_request: Callable[[int], None] = lambda _: None

    def items(self, start: int = 0, end: int | None = None) -> list[dict[str, Any]]:
        return [self.event(i) for i in range(start, self.size if end is None else end)]

    def handle(self, request: httpx.Request) -> httpx.Response:
        params = dict(request.url.params)
        self.on_request(len(self.asked))
        self.asked.append(params)
        start = int(params.get("cursor", "c0")[1:])
        end = min(self.size, start + int(params.get("limit", str(self.size))))
        body: dict[str, Any] = {"items": self.items(start, end)}
        if end < self.size:
            body["nextCursor"] = f"c{end}"
        return httpx.Response(200, json=body)


@pytest.fixture
def run(monkeypatch: pytest.MonkeyPatch) -> Callable[..., int]:
    """``contextctl`` in this process, its requests answered by a ``Service``."""

    def invoke(service: Service, *args: str) -> int:
        def client(settings: Settings, user_agent: str = "contextctl") -> Client:
            return Client(settings, httpx.MockTransport(service.handle), user_agent)

        with monkeypatch.context() as patch:
            patch.setattr(options, "Client", client)
            patch.setenv("CS_URL", URL)
            patch.setenv("CS_SUBJECT", "user:alice")
            patch.delenv("CS_TOKEN", raising=False)
            return main(list(args))

    return invoke


def former(service: Service, fmt: str, columns: history.Columns) -> str:
    """What ``--all`` printed before: the object holding every item, written at once."""
    stdout = sys.stdout
    sys.stdout = written = io.StringIO()
    try:
        output.emit_data({"items": service.items()}, fmt,
                         lambda data: history.print_page(columns, data))
    finally:
        sys.stdout = stdout
    return written.getvalue()


FORMATS = {output.TEXT: (), output.JSON: ("--json",), output.YAML: ("-o", "yaml")}
COMMANDS = {"audit": (audit_event, history.AUDIT), "events": (history_event, history.EVENTS)}


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("size", [0, 1, 999, 1000, 2_345])
def test_every_page_asked_and_printed_in_the_former_bytes(
        run: Callable[..., int], capsys: pytest.CaptureFixture[str], fmt: str, command: str,
        size: int) -> None:
    event, columns = COMMANDS[command]
    service = Service(size, event)
    capsys.readouterr()
    assert run(service, "history", command, "ctx", "--all", *FORMATS[fmt]) == 0
    printed = capsys.readouterr()
    assert printed.err == ""
    assert printed.out == former(service, fmt, columns)
    pages = max(1, -(-size // 1000))
    assert [a.get("limit") for a in service.asked] == ["1000"] * pages
    assert [a.get("cursor") for a in service.asked] == [None] + [
        f"c{1000 * p}" for p in range(1, pages)]


def test_a_given_limit_and_cursor_are_kept(run: Callable[..., int],
                                           capsys: pytest.CaptureFixture[str]) -> None:
    service = Service(25, audit_event)
    assert run(service, "history", "audit", "ctx", "--all", "--limit", "10", "--cursor", "c3",
               "--json") == 0
    assert json.loads(capsys.readouterr().out) == {"items": service.items(3)}
    assert service.asked == [{"limit": "10", "cursor": "c3"}, {"limit": "10", "cursor": "c13"},
                             {"limit": "10", "cursor": "c23"}]


@pytest.mark.parametrize("fmt", [output.JSON, output.YAML])
def test_a_document_is_written_as_its_pages_arrive(
        run: Callable[..., int], capsys: pytest.CaptureFixture[str], fmt: str) -> None:
    service = Service(2_500, audit_event)
    whole = former(service, fmt, history.AUDIT)
    seen: list[str] = []

    def note(request: int) -> None:
        seen.append(capsys.readouterr().out)

    service.on_request = note
    assert run(service, "history", "audit", "ctx", "--all", *FORMATS[fmt]) == 0
    seen.append(capsys.readouterr().out)
    assert "".join(seen) == whole
    assert seen[0] == ""  # nothing before the first page
    for written in seen[1:3]:  # each of the first two pages, before the next was asked for
        assert 0.3 < len(written) / len(whole) < 0.5, (len(written), len(whole))
    assert whole.startswith(seen[1] + seen[2])


class _Digest(io.RawIOBase):
    """Standard output that keeps only a digest of what it was given."""

    def __init__(self) -> None:
        self.digest = hashlib.sha256()

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        self.digest.update(data)
        return len(data)




@pytest.mark.parametrize("fmt", [pytest.param(output.TEXT, marks=pytest.mark.slow), output.JSON,
                                 pytest.param(output.YAML, marks=pytest.mark.slow)])
def test_memory_does_not_follow_the_length_of_the_history(
        run: Callable[..., int], monkeypatch: pytest.MonkeyPatch, fmt: str) -> None:
    """The peak while printing 10,000 events against 1,000: a ratio, no absolute figure (the
    pages merged into one list, or one unbounded answer, grew it about tenfold: measured at
    20,000, text 94 MB, JSON 41 MB, YAML 102 MB; now 6, 3 and 6 MB)."""
    sizes, digests = [], []
    for size in (1_000, 10_000):
        service = Service(size, audit_event)
        sink = _Digest()
        stdout = io.TextIOWrapper(io.BufferedWriter(sink), encoding="utf-8", newline="\n",
                                  write_through=True)
        codes: list[int] = []
        with monkeypatch.context() as patch:
            patch.setattr(sys, "stdout", stdout)
            sizes.append(peak_memory(lambda service=service, codes=codes: codes.append(
                run(service, "history", "audit", "ctx", "--all", *FORMATS[fmt]))))
            stdout.flush()
        assert codes == [0]
        digests.append(sink.digest.hexdigest())
        expected = hashlib.sha256(former(service, fmt, history.AUDIT).encode()).hexdigest()
        assert digests[-1] == expected
    assert sizes[1] < 2.5 * sizes[0], sizes

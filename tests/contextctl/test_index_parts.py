"""``contextctl index push`` of an index larger than one request, through a served process: the
parts it sends, the index they make current, and what an interrupted or refused upload leaves."""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from context_service.contextctl import index, options, upload
from context_service.contextctl.client import Client
from context_service.contextctl.parts import PART_BYTES
from context_service.contextctl.settings import Settings
from context_service.contextctl.upload import RETRY_DELAYS, IndexUpload, MultiPart, Sender
from tests.contextctl.conftest import Cli
from tests.contextctl.test_index_query import REV, records_file
from tests.contextctl.test_index_query import knowledge as knowledge_in

pytestmark = [pytest.mark.e2e, pytest.mark.postgres]
NS = ("-n", "ctl-parts")  # the package's service is shared: a namespace of this module's own

WORDS = ("release", "schedule", "backup", "restore", "tenant", "quota", "invoice", "region",
         "failover", "latency", "replica", "shard", "index", "cursor", "token", "ledger",
         "audit", "rotation", "policy", "deploy", "canary", "rollback", "incident", "runbook")
OLD = [{"id": "old-1", "text": "ledger before the upload"},
       {"id": "old-2", "text": "ledger kept when the upload stops"}]


def realistic(count: int, seed: int = 11) -> list[dict[str, Any]]:
    """Records like a knowledge sync's: a title, a paragraph, keywords, a source and a file."""
    rng = random.Random(seed)
    return [{"id": f"doc-{i:05d}", "title": " ".join(rng.choices(WORDS, k=4)).capitalize(),
             "text": "ledger " + " ".join(rng.choices(WORDS, k=18)),
             "keywords": rng.sample(WORDS, 3), "file": f"docs/section-{i // 100}/page-{i}.md",
             "source": {"context": "upstream", "type": "state", "revision": "ab" * 32}}
            for i in range(count)]


@dataclass
class Wire:
    """The ``PUT .../query-index`` bodies that reached the service, a fault to inject, and the
    waits before a part was sent again (recorded, not slept)."""

    bodies: list[dict[str, Any]] = field(default_factory=list)
    fault: Callable[[dict[str, Any], int], httpx.Response | None] | None = None
    attempts: int = 0
    waits: list[float] = field(default_factory=list)


class Recording(httpx.BaseTransport):
    def __init__(self, wire: Wire) -> None:
        self.wire, self.inner = wire, httpx.HTTPTransport()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if request.method == "PUT" and request.url.path.endswith("/query-index"):
            body = json.loads(request.read())
            self.wire.attempts += 1
            if self.wire.fault is not None:
                answer = self.wire.fault(body, self.wire.attempts)
                if answer is not None:
                    return answer
            self.wire.bodies.append(body)
        return self.inner.handle_request(request)

    def close(self) -> None:
        self.inner.close()


@pytest.fixture
def wire(monkeypatch: pytest.MonkeyPatch) -> Iterator[Wire]:
    seen = Wire()

    def client(settings: Settings, user_agent: str = "contextctl") -> Client:
        return Client(settings, Recording(seen), user_agent=user_agent)

    def sender(pushed: IndexUpload, part_size: int | None = None) -> Sender:
        chosen = upload.sender_for(pushed, part_size)
        if isinstance(chosen, MultiPart):
            chosen.sleep = seen.waits.append
        return chosen

    monkeypatch.setattr(options, "Client", client)
    monkeypatch.setattr(index, "sender_for", sender)
    yield seen


def knowledge(cli: Cli, name: str, tmp_path: Path) -> None:
    knowledge_in(cli, name, tmp_path, ns=NS)


def ids(cli: Cli, context: str) -> list[str]:
    found = cli("query", "ledger", "--context", context, "--limit", "100", "--all", "--json",
                *NS)
    assert found.code == 0, found.err
    return sorted(item["record"]["id"] for item in json.loads(found.out)["items"])


def push(cli: Cli, name: str, path: Path, *extra: str) -> Any:
    return cli("index", "push", name, str(path), *NS, *extra)


def test_a_large_index_is_sent_in_parts_and_becomes_current(cli: Cli, wire: Wire,
                                                            tmp_path: Path) -> None:
    knowledge(cli, "big", tmp_path)
    records = realistic(5000)
    path = records_file(tmp_path / "big.jsonl", records)
    assert path.stat().st_size > 1 << 20
    pushed = push(cli, "big", path)
    assert (pushed.code, pushed.out) == (0, f"published 5000 records for revision {REV[:12]} "
                                            "to big\n"), pushed.err
    parts = list(wire.bodies)
    assert len(parts) >= 3
    assert [b["part"] for b in parts] == list(range(1, len(parts) + 1))
    assert {(b["uploadId"], b["parts"], b["revision"]) for b in parts} == {
        (parts[0]["uploadId"], len(parts), REV)}
    assert [r["id"] for b in parts for r in b["records"]] == [r["id"] for r in records]
    sizes = [len(json.dumps(b, separators=(",", ":"))) for b in parts]
    assert max(sizes) <= PART_BYTES and min(sizes[:-1]) > PART_BYTES - 2048  # packed greedily
    assert ids(cli, "big") == [r["id"] for r in records]
    first = wire.bodies[0]["uploadId"]
    wire.bodies.clear()
    again = push(cli, "big", path, "--part-size", str(300_000))
    assert again.code == 0, again.err
    assert wire.bodies[0]["uploadId"] != first  # a fresh upload id per run
    assert all(len(json.dumps(b, separators=(",", ":"))) <= 300_000 for b in wire.bodies)
    assert len(wire.bodies) > len(parts)


def test_an_index_that_fits_is_one_request(cli: Cli, wire: Wire, tmp_path: Path) -> None:
    knowledge(cli, "small", tmp_path)
    records = realistic(1500)  # about 600 KiB: above a part, within one body
    pushed = push(cli, "small", records_file(tmp_path / "small.jsonl", records))
    assert pushed.code == 0, pushed.err
    assert len(wire.bodies) == 1 and set(wire.bodies[0]) == {"revision", "records"}
    assert len(ids(cli, "small")) == 1500
    wire.bodies.clear()
    limited = push(cli, "small", records_file(tmp_path / "few.jsonl", OLD), "--part-size", "4096")
    assert limited.code == 0 and len(wire.bodies) == 1 and "uploadId" not in wire.bodies[0]


def test_a_transient_failure_is_retried(cli: Cli, wire: Wire, tmp_path: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    knowledge(cli, "flaky", tmp_path)
    # about 210 KB in parts of 60,000 bytes: four parts, enough for the faults at parts 2 and 3
    # to be retried with a later part still to send
    records = realistic(400, seed=3)

    def fail_once(body: dict[str, Any], attempt: int) -> httpx.Response | None:
        if body.get("part") == 2 and attempt == 2:
            return httpx.Response(503, json={"message": "service unavailable"})
        if body.get("part") == 3 and attempt == 4:
            raise httpx.ConnectError("connection refused")
        return None

    wire.fault = fail_once
    records_file(tmp_path / "flaky.jsonl", records)
    monkeypatch.chdir(tmp_path)  # a short file name leaves the bar its columns
    pushed = cli("index", "push", "flaky", "flaky.jsonl", "--part-size", str(60_000), *NS,
                 TTY_COMPATIBLE="1")
    assert pushed.code == 0, pushed.err
    assert "uploading" in pushed.err and "100%" in pushed.err
    assert [b["part"] for b in wire.bodies][:3] == [1, 2, 3] and wire.attempts == len(
        wire.bodies) + 2
    assert len(wire.bodies) > 3
    assert wire.waits == [RETRY_DELAYS[0], RETRY_DELAYS[0]]  # each part's first retry
    assert len(ids(cli, "flaky")) == 400


def test_an_interrupted_upload_leaves_the_old_index(cli: Cli, wire: Wire,
                                                    tmp_path: Path) -> None:
    knowledge(cli, "kept", tmp_path)
    assert push(cli, "kept", records_file(tmp_path / "old.jsonl", OLD)).code == 0
    records = realistic(400, seed=5)  # four parts of 60,000 bytes: the stop falls between two
    path = records_file(tmp_path / "new.jsonl", records)
    part_size = ("--part-size", str(60_000))

    def stop_at_part_2(body: dict[str, Any], attempt: int) -> httpx.Response | None:
        if body.get("part") == 2:
            raise KeyboardInterrupt
        return None

    wire.fault = stop_at_part_2
    stopped = push(cli, "kept", path, *part_size)
    assert stopped.code == 130 and "interrupted" in stopped.err
    assert [b["part"] for b in wire.bodies[1:]] == [1]  # part 1 was staged
    assert ids(cli, "kept") == ["old-1", "old-2"]
    wire.fault = None
    assert push(cli, "kept", path, *part_size).code == 0  # a new upload replaces the open one
    assert ids(cli, "kept") == [r["id"] for r in records]


def test_a_refused_middle_part_stops_the_upload(cli: Cli, wire: Wire, tmp_path: Path) -> None:
    knowledge(cli, "refused", tmp_path)
    assert push(cli, "refused", records_file(tmp_path / "old.jsonl", OLD)).code == 0
    records = realistic(400, seed=7)  # four parts of 60,000 bytes
    records[200]["context"] = "other"  # the service refuses the middle part holding it
    refused = push(cli, "refused", records_file(tmp_path / "bad.jsonl", records),
                   "--part-size", str(60_000))
    assert refused.code == 1
    sent = wire.bodies[1:]
    count, holder = sent[-1]["parts"], sent[-1]["part"]
    assert "doc-00200" in {r["id"] for r in sent[-1]["records"]} and 1 < holder < count
    assert [b["part"] for b in sent] == list(range(1, holder + 1))  # nothing after the refusal
    assert refused.err.startswith(f"contextctl: upload stopped at part {holder} of {count} "
                                  "(records ")
    assert refused.err.endswith("): invalid context resource: query record identity does not "
                                "match its context; the previous index stays current\n")
    assert ids(cli, "refused") == ["old-1", "old-2"]


def test_a_record_larger_than_a_part_is_named_and_nothing_sent(cli: Cli, wire: Wire,
                                                               tmp_path: Path) -> None:
    knowledge(cli, "oversized", tmp_path)
    records = [*OLD, {"id": "huge", "text": "ledger " * 180_000}]
    refused = push(cli, "oversized", records_file(tmp_path / "huge.jsonl", records))
    assert refused.code == 1 and wire.attempts == 0
    assert refused.err.startswith('contextctl: record 3 (id "huge") is 1,260,')
    assert refused.err.endswith(" bytes of records: nothing was sent\n")
    small = push(cli, "oversized", records_file(tmp_path / "two.jsonl", realistic(40)),
                 "--part-size", "4096")
    assert small.code == 0 and len(wire.bodies) > 1
    one = push(cli, "oversized", records_file(tmp_path / "one.jsonl", [
        {"id": "wide", "text": "ledger " * 700}]), "--part-size", "4096")
    assert one.code == 1 and one.err.startswith('contextctl: record 1 (id "wide") is 5,042 bytes')

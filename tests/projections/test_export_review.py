"""What ``history verify`` must catch in an exported file, and where it says the file broke:
every byte of a line counts (a line spelled differently, or holding a key twice, reads
differently to different tools), and line numbers are the file's own, blank lines included.
What an export holds (every event, in order), and that it, like a read as of a past point,
reads the log a bounded number of bytes at a time."""

from __future__ import annotations

import hashlib
import io
import json
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from context_service.adapters.eventstore import export as export_module
from context_service.adapters.eventstore import timeline as timeline_module
from context_service.adapters.eventstore.export import export, verify, verify_file
from context_service.adapters.eventstore.store import EVENTS_TABLE
from context_service.adapters.eventstore.timeline import Timeline
from context_service.bootstrap import Container
from context_service.domain.context.commands import PublishRevision
from context_service.domain.stream import Recorded
from tests.projections.history import write_history
from tests.support.newer_events import NEWER, OWNER, create, record_newer

pytestmark = pytest.mark.postgres


@pytest.fixture
def rows(idle_container: Container) -> list[bytes]:
    write_history(idle_container.contexts, seed=7, steps=20)
    out = io.BytesIO()
    export(idle_container.store, out)
    exported = out.getvalue().splitlines()
    assert len(exported) >= 4 and verify(exported)[1] is None
    return exported


def _escape_first_character(line: bytes, key: bytes) -> bytes:
    """The first character of ``key``'s string value as a ``\\u`` escape: the same value."""
    at = line.index(key) + len(key)
    return line[:at] + b"\\u%04x" % line[at] + line[at + 1:]


def _file(tmp_path: Path, content: bytes) -> Path:
    path = tmp_path / "log.jsonl"
    path.write_bytes(content)
    return path


@pytest.mark.parametrize("respell", [
    pytest.param(lambda line: line.replace(b'"name":', b'"name": ', 1), id="whitespace"),
    pytest.param(lambda line: line.replace(b'"position":', b'"position":\t', 1), id="tab"),
    pytest.param(lambda line: _escape_first_character(line, b'"eventId":"'),
                 id="escaped-character"),
])
def test_a_line_spelled_differently_is_broken_at_that_line(
        rows: list[bytes], respell: Callable[[bytes], bytes]) -> None:
    tampered = list(rows)
    tampered[2] = respell(rows[2])
    assert tampered[2] != rows[2]
    assert verify(tampered)[1] == 3


def test_a_key_given_twice_is_broken_even_when_the_last_value_is_the_true_one(
        rows: list[bytes]) -> None:
    """Parsers disagree on which of two equal keys wins: an auditor's tool taking the first one
    would read ``mallory`` as the actor, while the hash (over the last one) still holds."""
    tampered = list(rows)
    tampered[1] = rows[1].replace(b'{"position":', b'{"actor":"user:mallory","position":', 1)
    assert verify(tampered)[1] == 2


def test_a_blank_line_is_reported_at_its_own_line_number(rows: list[bytes],
                                                         tmp_path: Path) -> None:
    content = b"\n".join(rows[:2]) + b"\n\n" + b"\n".join(rows[2:]) + b"\n"
    _, broken, why = verify_file(_file(tmp_path, content))
    assert (broken, why) == (3, "empty line")


def test_a_file_cut_inside_its_last_line_is_broken_there(rows: list[bytes],
                                                         tmp_path: Path) -> None:
    """Export ends every line with a newline: a last line without one was cut short, even when
    what is left of it still parses."""
    content = b"\n".join(rows)  # the final newline is gone
    _, broken, why = verify_file(_file(tmp_path, content))
    assert broken == len(rows)
    assert "newline" in why


def test_an_intact_file_verifies_with_every_line_counted(rows: list[bytes],
                                                         tmp_path: Path) -> None:
    assert verify_file(_file(tmp_path, b"".join(r + b"\n" for r in rows))) == (
        len(rows), None, "ok")


@pytest.mark.parametrize("tamper, line", [
    pytest.param(lambda r: [*r[:2], r[2], r[2], *r[3:]], 4, id="duplicated"),
    pytest.param(lambda r: [*r[:2], r[3], r[2], *r[4:]], 3, id="swapped"),
    pytest.param(lambda r: [*r, r[0]], None, id="first-appended-again"),
    pytest.param(lambda r: [r[0].replace(b'"hash":"', b'"hash":"0', 1), *r[1:]], 1,
                 id="hash-changed"),
    pytest.param(lambda r: [*r, b"{}"], None, id="object-without-hash"),
])
def test_moved_or_changed_lines_are_named(
        rows: list[bytes], tamper: Callable[[list[bytes]], list[bytes]], line: int | None
) -> None:
    expected = len(rows) + 1 if line is None else line
    assert verify(tamper(rows))[1] == expected


def test_a_number_out_of_range_is_broken_not_a_crash(rows: list[bytes]) -> None:
    tampered = [*rows[:1], rows[1].replace(b'"version":', b'"version":1e400,"x":', 1),
                *rows[2:]]
    assert verify(tampered)[1] == 2


UNUSUAL = "e\u0301 \u202eevil\u202c \u2028\u2029 \U0001f600 \x7f \ufeff \u0000-free \\ \" </script>"


def _publish(container: Container, name: str, parameters: dict[str, str]) -> int:
    return container.contexts.execute("ns", name, PublishRevision(
        actor=OWNER, id=hashlib.sha256(json.dumps(parameters).encode()).hexdigest(),
        created_at=datetime(2026, 1, 1, tzinfo=UTC), operation="sync",
        parameters=parameters)).position


def test_every_event_is_exported_in_order_unknown_and_unusual_ones_included(
        idle_container: Container) -> None:
    create(idle_container, "kept")
    unusual = _publish(idle_container, "kept", {"note": UNUSUAL})
    newer = record_newer(idle_container, "kept", 3)
    out = io.BytesIO()
    count, _ = export(idle_container.store, out)
    rows = out.getvalue().splitlines()
    assert count == len(rows) == idle_container.store.head()
    assert verify(rows) == (count, None, "ok")
    lines = {line["position"]: line for line in map(json.loads, rows)}
    assert list(lines) == sorted(lines)
    assert lines[newer]["name"] == NEWER
    assert lines[newer]["data"] == {"new_name": "renamed", "reason": "tidy"}
    assert lines[unusual]["data"]["revision"]["parameters"] == {"note": UNUSUAL}


def test_export_reads_the_log_a_bounded_number_of_bytes_at_a_time(
        idle_container: Container, monkeypatch: pytest.MonkeyPatch) -> None:
    """Events reach about 1 MB each: 2,000 of them at a time would be 2 GB in memory."""
    create(idle_container, "big")
    for i in range(8):
        _publish(idle_container, "big", {"blob": f"{i}" * 40_000})
    budget = 100_000
    monkeypatch.setattr(export_module, "_BATCH_BYTES", budget, raising=False)
    store = idle_container.store
    batches: list[list[int]] = []
    read = store.read

    def spying(after: int, limit: int, stop: int | None = None) -> list[Recorded]:
        batch = read(after, limit, stop)
        batches.append([r.position for r in batch])
        return batch

    monkeypatch.setattr(store, "read", spying)
    out = io.BytesIO()
    count, _ = export(store, out)
    assert count == store.head() == 9
    assert [p for batch in batches for p in batch] == list(range(1, 10))
    sizes = _stored_sizes(idle_container)
    for batch in batches:
        assert len(batch) == 1 or sum(sizes[p] for p in batch) <= budget, batch


def _stored_sizes(container: Container) -> dict[int, int]:
    with container.store.datastore.transaction(commit=False) as cur:
        cur.execute(f"SELECT notification_id, octet_length(state) AS size FROM {EVENTS_TABLE}")
        return {r["notification_id"]: r["size"] for r in cur.fetchall()}


# Reads as of a point fold every event of a namespace's contexts: a bounded number of bytes at a
# time, and the same state as one read of them all.


def test_as_of_reads_fold_the_log_a_bounded_number_of_bytes_at_a_time(
        idle_container: Container, monkeypatch: pytest.MonkeyPatch) -> None:
    create(idle_container, "big")
    create(idle_container, "small")
    for i in range(8):
        _publish(idle_container, "big", {"blob": f"{i}" * 40_000})
    for runner in idle_container.runners.values():
        runner.catch_up()  # the namespace's streams are found in the catalog
    budget = 100_000
    monkeypatch.setattr(timeline_module, "_BATCH_BYTES", budget, raising=False)
    timeline = Timeline(idle_container.store)
    reads: list[list[int]] = []
    select = timeline._select

    def spying(*args: Any, **kwargs: Any) -> list[Recorded]:
        found = select(*args, **kwargs)
        reads.append([r.position for r in found])
        return found

    monkeypatch.setattr(timeline, "_select", spying)
    states = {s.name: s for s in timeline.namespace_as_of("ns")}
    assert set(states) == {"big", "small"}
    assert len(states["big"].revisions) == 8
    assert timeline.state_as_of("ns", "big") == states["big"]
    assert timeline.state_as_of("ns", "big", position=5).revisions == states["big"].revisions[:3]
    sizes = _stored_sizes(idle_container)
    for read in reads:  # at most one event past the budget
        assert sum(sizes[p] for p in read[:-1]) < budget, read


def test_the_last_hash_export_printed_shows_a_file_cut_between_lines_or_added_to(
        idle_container: Container, tmp_path: Path) -> None:
    write_history(idle_container.contexts, seed=7, steps=20)
    out = io.BytesIO()
    count, last = export(idle_container.store, out)
    rows = out.getvalue().splitlines(keepends=True)
    assert count == len(rows) >= 4
    assert json.loads(rows[-1])["hash"] == last
    assert verify_file(_file(tmp_path, b"".join(rows)), last) == (count, None, "ok")
    # cut exactly between two lines: intact as a chain, short of the export's end
    checked, broken, why = verify_file(_file(tmp_path, b"".join(rows[:-1])), last)
    assert (checked, broken) == (count - 1, count) and "ends before the export's last" in why
    assert verify_file(_file(tmp_path, b"".join(rows[:-1])))[1] is None  # without the hash
    # a line added after the end, chained correctly: it is the one named
    extra = json.loads(rows[-1])
    extra = {**{k: v for k, v in extra.items() if k != "hash"}, "prevHash": last}
    extra["hash"] = export_module._chain_hash(last, extra)
    added = [*rows, json.dumps(extra, separators=(",", ":")).encode() + b"\n"]
    assert verify_file(_file(tmp_path, b"".join(added)))[1] is None
    _, broken, why = verify_file(_file(tmp_path, b"".join(added)), last)
    assert broken == count + 1 and why == f"a line after the export's last (line {count})"
    # an empty log: its last hash is the genesis
    assert verify([], last=export_module.GENESIS) == (0, None, "ok")
    assert verify(rows[:1], terminated=True, last=export_module.GENESIS)[1] == 1

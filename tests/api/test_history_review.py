"""The history and audit routes as an auditor pages them: cursors that are not the route's own
are refused with the documented 400 (never a 500), pages hold every event once while others
write, and a caller without administer learns nothing, whatever the query says."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlencode

import pytest

from context_service.domain.events import UnknownEvent
from context_service.domain.stream import Recorded, StreamRef
from context_service.http.routes.timeline import _page
from tests.api.conftest import Api
from tests.api.namespaced import Namespaced, namespaced

pytestmark = pytest.mark.shared_service
ALICE = "user:alice"
BAD_HISTORY_CURSOR = {"error": "invalid_request", "message": "invalid history cursor"}
BAD_AUDIT_CURSOR = {"error": "invalid_request", "message": "invalid audit cursor"}
BAD_LIMIT = {"error": "invalid_request", "message": "limit must be between 1 and 1000"}


@pytest.fixture
def api(api: Api) -> Namespaced:
    return namespaced(api)


@pytest.fixture
def alice(api: Namespaced) -> Namespaced:
    """``research-memory`` in the test's namespace, owned by ``user:alice``."""
    owner = api.as_(ALICE)
    assert owner.post("/v1/contexts", owner.context_body()).status_code == 201
    return owner


def _grant(api: Namespaced, name: str, *perms: str) -> None:
    r = api.put(api.context + "/grants", {"subject": {"kind": "agent", "name": name},
                                          "permissions": list(perms or ("read",))})
    assert r.status_code == 200, r.text


def _cursor(fields: dict[str, Any]) -> str:
    """``fields`` spelt as the routes spell a cursor (compact JSON, unpadded base64url): a
    cursor spelt otherwise is refused before its fields are looked at."""
    compact = json.dumps(fields, separators=(",", ":"))
    return base64.urlsafe_b64encode(compact.encode()).decode().rstrip("=")


def _fields(cursor: str) -> dict[str, Any]:
    decoded: dict[str, Any] = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor)
                                                                                     % 4)))
    return decoded


def _positions(api: Namespaced, query: str) -> tuple[list[int], str | None]:
    r = api.get(api.context + "/history" + query)
    assert r.status_code == 200, r.text
    body = r.json()
    return [i["position"] for i in body["items"]], body.get("nextCursor")


# positions no cursor of the context can hold: past a log position's range, or before the
# event that created the context (``g``)
FORGED = [pytest.param(lambda g: 2**63, id="2**63"), pytest.param(lambda g: 10**30, id="10**30"),
          pytest.param(lambda g: -1, id="negative"), pytest.param(lambda g: g - 1, id="before")]


@pytest.mark.parametrize("position", FORGED)
def test_a_history_cursor_beyond_any_log_position_is_the_documented_400(
        alice: Namespaced, position: Callable[[int], int]) -> None:
    _grant(alice, "a")
    _grant(alice, "b")
    _, cursor = _positions(alice, "?limit=1")
    assert cursor is not None
    fields = _fields(cursor)
    forged = _cursor({**fields, "p": position(fields["g"])})
    r = alice.get(alice.context + "/history?cursor=" + forged)
    assert (r.status_code, r.json()) == (400, BAD_HISTORY_CURSOR)


def test_a_history_cursor_in_another_spelling_is_the_documented_400(alice: Namespaced) -> None:
    """A history cursor is the route's own bytes: the same fields with padding, a character the
    base64 decoder skips, a line feed or JSON with spaces are refused, as audit cursors are."""
    _grant(alice, "a")
    _grant(alice, "b")
    positions, good = _positions(alice, "?limit=1")
    assert good is not None
    spaced = base64.urlsafe_b64encode(json.dumps(_fields(good)).encode()).decode().rstrip("=")
    for form in (good + "==", "%21" + good, good[:4] + "%21" + good[4:], good + "%0A", spaced):
        r = alice.get(alice.context + "/history?cursor=" + form)
        assert (r.status_code, r.json()) == (400, BAD_HISTORY_CURSOR), form
    assert _positions(alice, "?cursor=" + good)[0][0] > positions[-1]


@pytest.mark.parametrize("position", FORGED)
def test_an_audit_cursor_beyond_any_log_position_is_the_documented_400(
        alice: Namespaced, position: Callable[[int], int]) -> None:
    _grant(alice, "a")
    _grant(alice, "b")
    first = alice.get(alice.context + "/audit?limit=1").json()
    fields = _fields(first["nextCursor"])
    forged = _cursor({**fields, "p": position(fields["g"])})
    r = alice.get(alice.context + "/audit?cursor=" + forged)
    assert (r.status_code, r.json()) == (400, BAD_AUDIT_CURSOR)


def test_following_cursors_while_others_write_yields_every_event_once(alice: Namespaced) -> None:
    for i in range(3):
        _grant(alice, f"before-{i}")
    seen, cursor = _positions(alice, "?limit=2")
    written = 0
    while cursor is not None:
        if written < 4:  # someone else writes between the auditor's pages
            _grant(alice, f"during-{written}")
            written += 1
        page, cursor = _positions(alice, f"?limit=2&cursor={cursor}")
        seen += page
    everything, last = _positions(alice, "")
    assert last is None
    assert seen == everything
    assert written >= 1 and len(everything) == 1 + 3 + written


def test_a_cursor_of_the_previous_life_of_the_name_is_refused(alice: Namespaced) -> None:
    _grant(alice, "a")
    _, cursor = _positions(alice, "?limit=1")
    assert alice.delete(alice.context + "?force=true").status_code == 204
    assert alice.post("/v1/contexts", alice.context_body()).status_code == 201
    r = alice.get(alice.context + "/history?cursor=" + str(cursor))
    assert (r.status_code, r.json()) == (400, BAD_HISTORY_CURSOR)
    names = [i["name"] for i in alice.get(alice.context + "/history").json()["items"]]
    assert names == ["ContextCreated"]  # the earlier life is someone else's past


@pytest.mark.parametrize("query", ["?limit=0", "?limit=abc", "?cursor=nope",
                                   "?limit=1001&cursor=nope", ""])
def test_a_reader_without_administer_learns_nothing_from_a_bad_query(
        alice: Namespaced, query: str) -> None:
    """Order of checks: subject, administer, limit, cursor: a reader gets the same 404 as for
    a context that does not exist, whatever the query."""
    _grant(alice, "reader", "read", "write")
    reader = alice.as_("agent:reader")
    for route in ("/history", "/audit"):
        hidden = reader.get(alice.context + route + query)
        missing = reader.get(alice.contexts + "/no-such-context" + route + query)
        assert (hidden.status_code, hidden.json()) == (missing.status_code, missing.json())
        assert hidden.status_code == 404


@pytest.mark.parametrize("limit", ["0", "1001", "-1", "1e3", "\u0661", "", "99999999999999999999"])
def test_a_history_limit_out_of_range_is_the_documented_400(alice: Namespaced,
                                                            limit: str) -> None:
    r = alice.get(alice.context + "/history?" + urlencode({"limit": limit}))
    assert (r.status_code, r.json()) == (400, BAD_LIMIT)


def test_as_of_a_time_with_an_offset_is_the_same_instant_in_utc(alice: Namespaced) -> None:
    _grant(alice, "a")
    items = alice.get(alice.context + "/history").json()["items"]
    granted_at = items[-1]["time"]
    assert granted_at.endswith("Z")
    past = alice.get(alice.context + "/grants?" + urlencode({"asOf": "2000-01-01T02:00:00+02:00"}))
    assert past.status_code == 404  # before the context existed
    later = alice.get(alice.context + "/grants?" + urlencode(
        {"asOf": "2999-01-01T01:00:00+01:00"}))
    assert "a" in [g["subject"]["name"] for g in later.json()["items"]]


class _ShortReads:
    """The log's reads as the port allows them: fewer events than asked for (a read stops after
    a few MiB) while more follow."""

    def __init__(self, positions: list[int], per_read: int) -> None:
        self.recorded = [Recorded(p, StreamRef("context", "ns", "kept"), i + 1, "AccessRevoked",
                                  UnknownEvent(at=datetime(2026, 1, 1, tzinfo=UTC),
                                               actor="user:alice", fields={"n": p}))
                         for i, p in enumerate(positions)]
        self.per_read = per_read

    def events(self, namespace: str, name: str, after: int, limit: int | None,
               since: int) -> list[Recorded]:
        later = [r for r in self.recorded if r.position > max(after, since - 1)]
        return later[:min(self.per_read, limit or self.per_read)]


def test_a_short_read_of_the_log_does_not_end_the_history() -> None:
    reads = _ShortReads(list(range(10, 260)), per_read=7)
    seen: list[int] = []
    after = 0
    while True:
        items, last = _page(reads, "ns", "kept", after, 10, 100)  # type: ignore[arg-type]
        seen += [i["position"] for i in items]
        if last is None:
            break
        after = last
    assert seen == list(range(10, 260))


@pytest.mark.parametrize("sequence", [-1, 2**31, 10**30])
def test_an_audit_cursor_with_a_sequence_no_entry_has_is_the_documented_400(
        alice: Namespaced, sequence: int) -> None:
    _grant(alice, "a")
    _grant(alice, "b")
    first = alice.get(alice.context + "/audit?limit=1").json()
    forged = _cursor({**_fields(first["nextCursor"]), "q": sequence})
    r = alice.get(alice.context + "/audit?cursor=" + forged)
    assert (r.status_code, r.json()) == (400, BAD_AUDIT_CURSOR)

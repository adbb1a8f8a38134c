"""Spec 1.10 without ``limit``: every event, in the bytes one JSON body would have, at a cost in
memory that does not follow the length of the context's history (it is streamed a page at a
time), with every check run before the first byte.

The histories are written the fastest way the projection allows: its own table writes
(``AuditSql.append``), a third of them as one adoption's many entries at the creation position,
the rest one entry per later position, some without a target."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import anyio
import msgspec
import pytest

from context_service import bootstrap
from context_service.adapters.postgres.views.contexts import AuditSql, ContextReadsSql
from context_service.domain.events import Subject
from context_service.domain.stream import context_stream
from context_service.http import render
from tests.api.conftest import Api, context_body, expect
from tests.support.memory_cost import peak_memory

NS, NAME = "team1", "research-memory"
AUDIT = f"/v1/namespaces/{NS}/contexts/{NAME}/audit"
NOT_FOUND = {"error": "not_found", "message": "context resource not found"}
BAD_LIMIT = {"error": "invalid_request", "message": "limit must be between 1 and 1000"}
BAD_CURSOR = {"error": "invalid_request", "message": "invalid audit cursor"}
ITEMS, CURSOR_KEY = b'{"items":[', b'],"nextCursor":"'
ALICE = "user:alice"
# subject names a JSON body must escape, or carries as UTF-8, as the renderer writes them
NAMES = ("plain", 'quo"te', "back\\slash", "sl/ash", "gr\u00fc\u00dfe", "tab\there")


@pytest.fixture
def owner(api: Api, container: bootstrap.Container) -> Api:
    """``research-memory`` owned by ``user:alice``, in a database whose ``audit_log`` the
    autovacuum leaves unanalysed (as a context's just-written entries are)."""
    with container.datastore.transaction(commit=True) as cur:
        cur.execute("ALTER TABLE audit_log SET (autovacuum_enabled = off)")
    alice = api.as_(ALICE)
    assert alice.post("/v1/contexts", context_body()).status_code == 201
    assert alice.get(f"/v1/namespaces/{NS}/contexts/{NAME}").status_code == 200
    return alice


def since(container: bootstrap.Container, name: str = NAME) -> int:
    entry = ContextReadsSql(container.datastore).get(NS, name)
    assert entry is not None
    return entry.created_position


def fill(container: bootstrap.Container, n: int, name: str = NAME, first: int = 0) -> None:
    """``n`` more audit entries of ``name``: a third of them at the creation position (as an
    adoption's), the rest at later positions from ``first`` on."""
    created = since(container, name)
    stream = context_stream(NS, name).id
    actor, start = Subject("user", "alice"), datetime(2026, 1, 1, tzinfo=UTC)
    rows = []
    for i in range(first, first + n):
        position, seq = (created, i + 1) if i < n // 3 else (created + 1 + i, 0)
        target = Subject("agent", f"{NAMES[i % len(NAMES)]}-{i}") if i % 5 else None
        rows.append((stream, position, seq, start + timedelta(microseconds=1001 * i),
                     "grant.set", actor, target))
    with container.datastore.transaction(commit=True) as cur:
        AuditSql(cur).append(rows)


def one_body(container: bootstrap.Container, name: str = NAME) -> bytes:
    """The answer as the route rendered it before it streamed: every entry read at once and
    encoded as one ``{"items": [...]}``."""
    entries = ContextReadsSql(container.datastore).audit(NS, name, since(container, name),
                                                         (0, -1), 10**9)
    return msgspec.json.encode({"items": [render.audit_event(e) for e in entries]})


def paged(alice: Api, query: str = "") -> tuple[bytes, list[str]]:
    """The ``items`` of every ``limit=1000`` page from ``query`` on, their bytes joined into
    one body as the unbounded answer should be, and the cursors the pages returned."""
    parts, cursors = [], []
    while True:
        resp = alice.get(f"{AUDIT}?limit=1000{query}")
        assert resp.status_code == 200, resp.text
        body: bytes = resp.content
        assert body.startswith(ITEMS)
        if CURSOR_KEY not in body:
            parts.append(body[len(ITEMS):-2])
            return ITEMS + b",".join(p for p in parts if p) + b"]}", cursors
        parts.append(body[len(ITEMS):body.rindex(CURSOR_KEY)])
        cursors.append(resp.json()["nextCursor"])
        query = f"&cursor={cursors[-1]}"


@dataclass
class Served:
    """What a client of the ASGI application received, and what it raised."""

    status: int = 0
    headers: dict[str, str] = field(default_factory=dict)
    body: bytearray = field(default_factory=bytearray)
    chunks: int = 0
    keep: bool = True
    error: BaseException | None = None


def serve(api: Api, path: str, subject: str = ALICE, keep: bool = True) -> Served:
    """GET ``path`` from the application as a server would (the request once, a disconnect only
    once the answer is over), the body kept or only counted: the test client would gather it
    into memory of its own, and the cost measured is the service's."""
    served = Served(keep=keep)
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
             "method": "GET", "scheme": "http", "path": path, "raw_path": path.encode(),
             "query_string": b"", "root_path": "", "server": ("testserver.local", 80),
             "client": ("127.0.0.1", 50000),
             "headers": [(b"host", b"testserver.local"), (b"x-context-subject", subject.encode())]}

    async def call() -> None:
        over = anyio.Event()
        asked = 0

        async def receive() -> dict[str, Any]:
            nonlocal asked
            asked += 1
            if asked == 1:
                return {"type": "http.request", "body": b"", "more_body": False}
            await over.wait()
            return {"type": "http.disconnect"}

        async def send(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                served.status = message["status"]
                served.headers = {k.decode(): v.decode() for k, v in message["headers"]}
            elif message["type"] == "http.response.body":
                served.chunks += 1
                if served.keep:
                    served.body += message.get("body", b"")
                if not message.get("more_body", False):
                    over.set()

        try:
            await api.client.app(scope, receive, send)
        except Exception as exc:  # what the server would see, kept for the test
            served.error = exc
        finally:
            over.set()

    api.client.blocking_portal.call(call)
    return served




def test_the_whole_history_streams_the_bytes_of_one_body(
        owner: Api, container: bootstrap.Container) -> None:
    fill(container, 3_500)
    resp = owner.get(AUDIT)
    assert resp.status_code == 200
    assert resp.headers["content-type"] == "application/json"
    assert "content-length" not in resp.headers  # streamed, not rendered whole
    expected = one_body(container)
    assert resp.content == expected
    pages, cursors = paged(owner)
    assert pages == expected
    assert len(cursors) == 3
    for cursor in cursors:  # from any page's cursor on: the rest, as the pages read it
        rest = owner.get(f"{AUDIT}?cursor={cursor}")
        assert rest.status_code == 200
        assert rest.content == paged(owner, f"&cursor={cursor}")[0]


def test_a_history_of_one_page_is_answered_as_before(
        owner: Api, container: bootstrap.Container) -> None:
    fill(container, 998)  # with the creation: 999 entries, within the first page read
    resp = owner.get(AUDIT)
    assert resp.status_code == 200
    assert resp.content == one_body(container) == paged(owner)[0]
    assert resp.headers["content-length"] == str(len(resp.content))
    cursor = owner.get(AUDIT + "?limit=998").json()["nextCursor"]
    rest = owner.get(f"{AUDIT}?cursor={cursor}")
    assert rest.content == paged(owner, f"&cursor={cursor}")[0]
    assert len(rest.json()["items"]) == 1
    assert rest.headers["content-length"] == str(len(rest.content))


def test_memory_does_not_follow_the_length_of_the_history(
        api: Api, owner: Api, container: bootstrap.Container) -> None:
    """The peak while answering 20,000 entries against 2,000: a ratio, no absolute figure (the
    whole log read, rendered and encoded at once grew it about tenfold, measured)."""
    assert owner.post("/v1/contexts", context_body(name="long")).status_code == 201
    assert owner.get(f"/v1/namespaces/{NS}/contexts/long").status_code == 200
    fill(container, 2_000)
    fill(container, 20_000, name="long")
    short, long = AUDIT, f"/v1/namespaces/{NS}/contexts/long/audit"
    for path in (short, long):
        assert serve(api, path).body == one_body(container, path.split("/")[-2])
    sizes = answer_peaks(api, (short, long))
    assert sizes[1] < 2.5 * sizes[0], sizes


def answer_peaks(api: Api, paths: Sequence[str]) -> list[int]:
    """For each of ``paths``, the least traced peak of two answers served whole (a 200 read
    to its end, the body not kept): what answering it costs the server in memory."""
    sizes = []
    for path in paths:
        answers: list[Served] = []

        def answer(path: str = path, answers: list[Served] = answers) -> None:
            answers.append(serve(api, path, keep=False))

        sizes.append(min(peak_memory(answer) for _ in range(2)))
        assert answers and all(a.status == 200 and a.error is None for a in answers)
    return sizes


def test_every_check_runs_before_the_first_byte(
        owner: Api, container: bootstrap.Container) -> None:
    """Subject, administer, limit, cursor: in that order, on a history long enough to stream."""
    fill(container, 2_500)
    expect(owner.as_("agent:stranger").get(f"{AUDIT}?limit=0&cursor=bad"), 404, NOT_FOUND)
    expect(owner.get(f"/v1/namespaces/{NS}/contexts/absent/audit?cursor=bad"), 404, NOT_FOUND)
    expect(owner.get(f"{AUDIT}?limit=0&cursor=bad"), 400, BAD_LIMIT)
    expect(owner.get(f"{AUDIT}?cursor=bad"), 400, BAD_CURSOR)
    resp = owner.as_("bad header").get(f"{AUDIT}?limit=0")
    assert resp.status_code == 400
    assert resp.json()["message"].startswith("X-Context-Subject must be")
    assert serve(owner, AUDIT, "agent:stranger").status == 404


def test_a_failure_after_the_first_byte_cuts_the_body_short(
        owner: Api, container: bootstrap.Container, monkeypatch: pytest.MonkeyPatch) -> None:
    fill(container, 2_500)
    assert_cut_short_by_a_failed_second_page(owner, AUDIT, "audit", monkeypatch)


def assert_cut_short_by_a_failed_second_page(owner: Api, path: str, reading: str,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """The history at ``path`` read with ``ContextReadsSql.<reading>`` failing at its second
    page, after the answer started: the body is cut short, never a whole-looking history."""
    read = getattr(ContextReadsSql, reading)
    calls = 0

    def failing(self: ContextReadsSql, *args: Any, **kwargs: Any) -> Any:
        nonlocal calls
        calls += 1
        if calls == 2:  # the first page is read before the answer starts, the second after
            raise RuntimeError("the database went away")
        return read(self, *args, **kwargs)

    monkeypatch.setattr(ContextReadsSql, reading, failing)
    served = serve(owner, path)
    assert served.status == 200
    assert served.error is not None  # the server drops the connection: a body cut short
    assert served.body.startswith(ITEMS)
    assert not served.body.endswith(b"]}")


def test_the_history_ends_where_it_stood_as_the_checks_passed(
        owner: Api, container: bootstrap.Container, monkeypatch: pytest.MonkeyPatch) -> None:
    """Entries recorded while the answer streams belong to later readings; a generation
    created meanwhile is never this one's history."""
    fill(container, 2_500)
    expected = one_body(container)
    read = ContextReadsSql.audit
    calls = 0

    def growing(self: ContextReadsSql, *args: Any, **kwargs: Any) -> Any:
        nonlocal calls
        calls += 1
        if calls == 2:
            fill(container, 1_500, first=10_000)
        return read(self, *args, **kwargs)

    monkeypatch.setattr(ContextReadsSql, "audit", growing)
    served = serve(owner, AUDIT)
    assert (served.status, served.error) == (200, None)
    assert bytes(served.body) == expected
    monkeypatch.undo()
    assert owner.get(AUDIT).content == one_body(container) != expected


class _Noting:
    """A cursor that notes each statement it runs, to explain them again."""

    def __init__(self, cur: Any, statements: list[tuple[str, Any]]) -> None:
        self.cur, self.statements = cur, statements

    def execute(self, sql: str, params: Any = None) -> Any:
        self.statements.append((sql, params))
        return self.cur.execute(sql, params)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.cur, name)


class _Recorded:
    """A datastore whose cursors note their statements."""

    def __init__(self, datastore: Any) -> None:
        self.datastore = datastore
        self.statements: list[tuple[str, Any]] = []

    @contextlib.contextmanager
    def transaction(self, commit: bool = False) -> Iterator[_Noting]:
        with self.datastore.transaction(commit=commit) as cur:
            yield _Noting(cur, self.statements)


def _plan_rows(node: dict[str, Any]) -> Iterator[int]:
    yield int(node["Actual Rows"])
    for child in node.get("Plans", ()):
        yield from _plan_rows(child)


def test_a_page_reads_about_a_page_of_rows_wherever_it_starts(
        owner: Api, container: bootstrap.Container) -> None:
    """Each page of a long, unanalysed history walks the index from its cursor: read whole
    and sorted for every page instead, the pages of a history cost its length squared."""
    fill(container, 20_000)
    recorded = _Recorded(container.datastore)
    reads = ContextReadsSql(recorded)  # type: ignore[arg-type]
    created = since(container)
    page = reads.audit(NS, NAME, created, (created, 500), 1000, (created + 30_000, 0))
    assert len(page) == 1000
    *settings, (query, params) = recorded.statements
    with container.datastore.transaction(commit=False) as cur:
        for sql, values in settings:
            cur.execute(sql, values)
        cur.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + query, params)
        plan = cur.fetchone()["QUERY PLAN"][0]["Plan"]
    assert max(_plan_rows(plan)) <= 1001, plan

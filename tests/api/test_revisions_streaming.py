"""Spec 1.6: every revision of a context, in the bytes one JSON body would have, at a cost in
memory that does not follow the length of its history (it is streamed a page at a time), with
every check run before the first byte.

The histories are written the fastest way the projections allow: their own table writes, the
revisions (``RevisionSql.append``, a third of them as one adoption's many at one position, the
rest one per later position) and the catalog's state holding them as its history
(``CatalogSql.save``), as publishing them would leave both views."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import msgspec
import pytest

from context_service import bootstrap
from context_service.adapters.postgres.views.contexts import (
    CatalogSql,
    ContextReadsSql,
    RevisionSql,
)
from context_service.domain.context.events import Revision, SourceRef
from context_service.domain.stream import context_stream
from context_service.http import render
from tests.api.conftest import Api, context_body, expect
from tests.api.test_audit_streaming import (
    ALICE,
    NAMES,
    answer_peaks,
    assert_cut_short_by_a_failed_second_page,
    serve,
)

NS, NAME = "team1", "research-memory"
REVISIONS = f"/v1/namespaces/{NS}/contexts/{NAME}/revisions"
NOT_FOUND = {"error": "not_found", "message": "context resource not found"}


@pytest.fixture
def owner(api: Api, container: bootstrap.Container) -> Api:
    """``research-memory`` owned by ``user:alice``, in a database whose ``revision_history``
    the autovacuum leaves unanalysed (as a context's just-written revisions are)."""
    with container.datastore.transaction(commit=True) as cur:
        cur.execute("ALTER TABLE revision_history SET (autovacuum_enabled = off)")
    alice = api.as_(ALICE)
    assert alice.post("/v1/contexts", context_body()).status_code == 201
    assert alice.get(f"/v1/namespaces/{NS}/contexts/{NAME}").status_code == 200
    return alice


def since(container: bootstrap.Container, name: str = NAME) -> int:
    entry = ContextReadsSql(container.datastore).get(NS, name)
    assert entry is not None
    return entry.created_position


def revision(i: int) -> Revision:
    """The ``i``-th revision: every optional field in some, names to escape in others."""
    word = NAMES[i % len(NAMES)]
    return Revision(
        id=f"{i:064x}", created_at=datetime(2026, 1, 1, tzinfo=UTC) + timedelta(
            microseconds=1001 * i), operation=("sync", "transform", "clone")[i % 3],
        producer=f"{word}-{i}" if i % 2 else "",
        parameters={"z": word, "a": str(i)} if i % 3 else {},
        sources=(SourceRef(f"src-{word}", "memory", f"{i:064x}"),) if i % 4 == 1 else (),
        files=i, bytes=1000 * i)


def fill(container: bootstrap.Container, n: int, name: str = NAME, first: int = 0) -> None:
    """``n`` more revisions of ``name``: a third of them at one position (as an adoption's),
    the rest at later positions from ``first`` on; the catalog's history holds them too."""
    created = since(container, name)
    stream = context_stream(NS, name).id
    made = [revision(i) for i in range(first, first + n)]
    rows = [(stream, created + 1, i + 1, r) if i < n // 3 else (stream, created + 2 + i, 0, r)
            for i, r in zip(range(first, first + n), made, strict=True)]
    with container.datastore.transaction(commit=True) as cur:
        RevisionSql(cur).append(rows)
        catalog = CatalogSql(cur)
        state, created_position = catalog.load([stream])[stream]
        state = msgspec.structs.replace(state, revisions=(*state.revisions, *made),
                                        current_revision=made[-1].id)
        catalog.save([(stream, state, created_position)])


def one_body(container: bootstrap.Container, name: str = NAME) -> bytes:
    """The answer as the route rendered it before it streamed: every revision read at once and
    encoded as one ``{"items": [...]}``."""
    with container.datastore.transaction(commit=False) as cur:
        cur.execute("SELECT doc::text AS doc FROM revision_history WHERE stream_id = %s"
                    " AND position >= %s ORDER BY position, seq",
                    (context_stream(NS, name).id, since(container, name)))
        docs = [msgspec.json.decode(r["doc"], type=Revision) for r in cur.fetchall()]
    return msgspec.json.encode({"items": [render.revision(r) for r in docs]})


def test_every_revision_streams_the_bytes_of_one_body(
        owner: Api, container: bootstrap.Container) -> None:
    fill(container, 3_500)
    resp = owner.get(REVISIONS)
    assert resp.status_code == 200
    assert resp.headers["content-type"] == "application/json"
    assert "content-length" not in resp.headers  # streamed, not rendered whole
    assert resp.content == one_body(container)
    assert len(resp.json()["items"]) == 3_500


@pytest.mark.parametrize("count", [0, 1, 999, 1000])
def test_a_history_of_one_page_is_answered_as_before(
        owner: Api, container: bootstrap.Container, count: int) -> None:
    if count:
        fill(container, count)
    resp = owner.get(REVISIONS)
    assert resp.status_code == 200
    assert resp.content == one_body(container)
    assert len(resp.json()["items"]) == count
    assert resp.headers["content-length"] == str(len(resp.content))


def test_memory_does_not_follow_the_length_of_the_history(
        api: Api, owner: Api, container: bootstrap.Container) -> None:
    """The peak while answering 20,000 revisions against 2,000: a ratio, no absolute figure
    (every revision read, rendered and encoded at once grew it about tenfold, measured)."""
    assert owner.post("/v1/contexts", context_body(name="long")).status_code == 201
    assert owner.get(f"/v1/namespaces/{NS}/contexts/long").status_code == 200
    fill(container, 2_000)
    fill(container, 20_000, name="long")
    short, long = REVISIONS, f"/v1/namespaces/{NS}/contexts/long/revisions"
    for path in (short, long):
        assert serve(api, path).body == one_body(container, path.split("/")[-2])
    sizes = answer_peaks(api, (short, long))
    assert sizes[1] < 2.5 * sizes[0], sizes


def test_every_check_runs_before_the_first_byte(
        owner: Api, container: bootstrap.Container) -> None:
    """Subject, then read: on a history long enough to stream."""
    fill(container, 2_500)
    expect(owner.as_("agent:stranger").get(REVISIONS), 404, NOT_FOUND)
    expect(owner.get(f"/v1/namespaces/{NS}/contexts/absent/revisions"), 404, NOT_FOUND)
    resp = owner.as_("bad header").get(REVISIONS)
    assert resp.status_code == 400
    assert resp.json()["message"].startswith("X-Context-Subject must be")
    assert serve(owner, REVISIONS, "agent:stranger").status == 404


def test_a_failure_after_the_first_byte_cuts_the_body_short(
        owner: Api, container: bootstrap.Container, monkeypatch: pytest.MonkeyPatch) -> None:
    fill(container, 2_500)
    assert_cut_short_by_a_failed_second_page(owner, REVISIONS, "revisions", monkeypatch)


def test_the_history_ends_where_it_stood_as_the_checks_passed(
        owner: Api, container: bootstrap.Container, monkeypatch: pytest.MonkeyPatch) -> None:
    """Revisions published while the answer streams belong to later readings."""
    fill(container, 2_500)
    expected = one_body(container)
    read = ContextReadsSql.revisions
    calls = 0

    def growing(self: ContextReadsSql, *args: Any, **kwargs: Any) -> Any:
        nonlocal calls
        calls += 1
        if calls == 2:
            fill(container, 1_500, first=10_000)
        return read(self, *args, **kwargs)

    monkeypatch.setattr(ContextReadsSql, "revisions", growing)
    served = serve(owner, REVISIONS)
    assert (served.status, served.error) == (200, None)
    assert bytes(served.body) == expected
    monkeypatch.undo()
    assert owner.get(REVISIONS).content == one_body(container) != expected

"""In-process tables that callers can grow stay bounded: what a long-running process keeps per
distinct thing a caller sends (a column type, a query string, a label value) has a ceiling, and
what is served after an entry was dropped is what was served before."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from psycopg.pq.abc import PGresult

from context_service.adapters.pack.warmer import CorpusWarmer
from context_service.adapters.postgres.database import open_datastore
from context_service.adapters.postgres.sandbox.session import TemplateSandbox

SANE = 1024  # no table keyed by what callers send should keep more entries than this


@pytest.fixture
def sandbox(pg_admin_url: str) -> Iterator[TemplateSandbox]:
    datastore = open_datastore(pg_admin_url, pool_size=1, max_overflow=0)
    try:
        yield TemplateSandbox(datastore, pg_admin_url, None)
    finally:
        datastore.close()


def _columns(conn: psycopg.Connection[Any], sizes: range) -> PGresult:
    """A result of one ``varchar(n)`` column per size: a distinct (type, modifier) each."""
    cur = conn.execute("SELECT " + ", ".join(f"NULL::varchar({n})" for n in sizes))
    assert cur.pgresult is not None
    return cur.pgresult


def test_the_column_type_names_a_sandbox_keeps_are_bounded(sandbox: TemplateSandbox,
                                                           pg_admin_url: str) -> None:
    """A template's author chooses its columns' types and modifiers (``varchar(1)`` to
    ``varchar(10485760)``, ``numeric(p, s)``, ...): runs of many such templates must not grow
    the names the sandbox remembers past a bound, and a name dropped is looked up again."""
    with psycopg.connect(pg_admin_url, autocommit=True) as conn:
        for start in range(1, 4 * SANE, 1000):
            sandbox._fields(_columns(conn, range(start, start + 1000)))
        assert len(sandbox._types) <= SANE
        held = {name: value for name, _, labels, value in sandbox.cache_gauges()
                if labels == {"cache": "sandbox_type_names"}}
        assert held["cs_cache_entries"] == len(sandbox._types)
        first = sandbox._fields(_columns(conn, range(1, 3)))
    assert [c["type"] for c in first] == ["character varying(1)", "character varying(2)"]


class _Unreadable:
    def transaction(self, commit: bool = True) -> Any:
        raise ConnectionError("the database is away")  # the warmer's pass loads nothing


class _Loader:
    """What the warmer reads of a corpus loader: how many indexes were loaded (a pack's load
    counts too), and the datastore of its own pass."""

    def __init__(self) -> None:
        self.loads = 0
        self.datastore = _Unreadable()


class _InFlight:
    """Objects a request holds while the warmer freezes, in a reference cycle (an exception and
    its traceback, a future and its callbacks): garbage once the request ends."""

    def __init__(self, objects: int) -> None:
        self.held = [[] for _ in range(objects)]
        self.me = self


def test_what_a_freeze_caught_in_flight_is_collected_once_it_is_garbage() -> None:
    """The warmer freezes the heap after each load (``gc.freeze``) so the cyclic collector's
    passes skip the corpora; whatever else was alive then and later dies in a cycle is never
    collected. One publication after another, that must not grow the frozen heap for ever."""
    gc.collect()
    gc.freeze()  # what start-up freezes
    try:
        start = gc.get_freeze_count()
        loader = _Loader()
        warmer = CorpusWarmer(loader)  # type: ignore[arg-type]
        ended = []
        for _ in range(8):  # publications, each loaded while requests are in flight
            request = _InFlight(start // 2)
            ended.append(weakref.ref(request))
            loader.loads += 1
            warmer.step()
            del request
        gc.collect()
        assert gc.get_freeze_count() < 3 * start  # 4 * start of garbage went through
        assert sum(r() is not None for r in ended) <= 4
    finally:
        gc.unfreeze()

"""The SQL path of field plans against the in-memory reference over generated corpora
(Hypothesis): the same matched documents, rows and aggregates, and sums equal to exact
references (``math.fsum``, exact decimals per currency). One service for the module: each test
publishes its corpora in a namespace of its own."""

from __future__ import annotations

import math
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from context_service import bootstrap
from context_service.adapters.postgres.views.fields_plans import FieldReadsSql
from context_service.domain.context.events import FieldSpan, QueryRecord, RecordField
from context_service.domain.fields.answering import HeadCitations
from context_service.domain.fields.engine import answer
from context_service.domain.fields.memory import MemorySource
from context_service.domain.fields.plan import Filter, Function, Plan
from tests.projections.pack_support import collection, publish
from tests.support.api_helpers import fresh
from tests.support.hypothesis_profiles import scaled

pytestmark = [pytest.mark.postgres, pytest.mark.shared_service]
NAME = "generated"
CURRENCIES = ("EUR", "USD")
amounts = st.builds(lambda i, f: f"{i}.{f}" if f else str(i),
                    st.integers(-10**6, 10**6), st.sampled_from(["", "5", "25", "125"]))
values = {
    "n": st.floats(-1e6, 1e6, allow_nan=False) | st.sampled_from([0.1, 0.2, 0.3, -0.0, 1e-7]),
    "m": st.fixed_dictionaries({"amount": amounts, "currency": st.sampled_from(CURRENCIES)}),
    "d": st.dates().map(lambda d: d.isoformat()),
    "b": st.booleans(),
    "t": st.sampled_from(["Alpha", "alphabet", "BETA", "beta", "", "Ünïcode", "a\u0000b"]),
}
TYPES = {"n": "number", "m": "money", "d": "date", "b": "boolean", "t": "text"}


@pytest.fixture
def ns() -> str:
    """The namespace of the test's collection: one no other test of the run writes to."""
    return fresh("ns")


@st.composite
def corpora(draw: Any) -> list[tuple[str, str, dict[str, Any]]]:
    """(record id, file, {field: value}) in publish order; files group records."""
    out = []
    for i in range(draw(st.integers(0, 25))):
        fields = {k: draw(v) for k, v in values.items() if draw(st.booleans())}
        out.append((f"r{i}", draw(st.sampled_from(["", "a", "b", "c", "d"])), fields))
    return out


def filters() -> Any:
    def one(key: str) -> Any:
        ops = {"n": ["eq", "ne", "lt", "lte", "gt", "gte"], "m": ["eq", "ne", "lt", "gte"],
               "d": ["lt", "gte", "eq"], "b": ["eq", "ne"], "t": ["eq", "ne", "contains",
                                                                 "prefix"]}[key]
        value = values[key] if key != "t" else st.sampled_from(["al", "BE", "beta", "", "ü"])
        return st.one_of(
            st.builds(Filter, st.just(key), st.sampled_from(ops), value),
            st.builds(Filter, st.just(key), st.just("exists"), st.booleans()))
    return st.lists(st.sampled_from(list(values)).flatmap(one), max_size=3)


def _records(rev: str, corpus: list[tuple[str, str, dict[str, Any]]]) -> tuple[QueryRecord, ...]:
    return tuple(QueryRecord(
        id=rid, context=NAME, type="memory", revision=rev, text=f"text of {rid} here",
        file=file, fields=tuple(RecordField(k, TYPES[k], v, FieldSpan(0, 4) if k != "b" else None)
                                for k, v in fields.items()))
        for rid, file, fields in corpus)


def _functions(known: Any, picks: list[int]) -> tuple[Function, ...]:
    """Up to 6 of every function the fields present allow, chosen by ``picks``."""
    choices = [Function("count")] + [Function("count", k) for k in values if k in known]
    choices += [Function(op, k) for k in ("n", "m") if k in known
                for op in ("sum", "avg", "min", "max")]
    choices += [Function(op, k) for k in ("d", "t") if k in known for op in ("min", "max")]
    return tuple(choices[i % len(choices)] for i in picks)


def _both(container: bootstrap.Container, ns: str, plan: Plan,
          memory: MemorySource) -> tuple[dict[str, Any], dict[str, Any]]:
    """The answer of the SQL plans and that of the in-memory reference."""
    cite = HeadCitations().cite
    with FieldReadsSql(container.datastore).session() as session:
        current = session.current(ns, NAME)
        assert current is not None and current.publication
        sql = answer(plan, session.source(current), cite)
    return sql, answer(plan, memory, cite)


@settings(max_examples=scaled(25), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(corpus=corpora(), chosen=filters(), group=st.sampled_from([None, "n", "d", "b", "t"]),
       sort=st.sampled_from([None, "n", "m", "d", "b", "t"]), desc=st.booleans(),
       picks=st.lists(st.integers(0, 40), min_size=1, max_size=6),
       limit=st.sampled_from([1, 3, 200]), rows=st.booleans())
def test_sql_answers_equal_the_reference(container: bootstrap.Container, ns: str, corpus: Any,
                                         chosen: list[Filter], group: str | None,
                                         sort: str | None, desc: bool, picks: list[int],
                                         limit: int, rows: bool) -> None:
    rev = f"{abs(hash((repr(corpus), repr(chosen)))):064d}"[-64:]
    _publish(container, ns, rev, corpus)
    records = _records(rev, corpus)
    memory = MemorySource(NAME, records)
    known = memory.catalog()
    usable = [f for f in chosen if f.field in known]
    plan = Plan(fields=tuple(k for k in values if k in known and rows), filters=tuple(usable),
                sort_field=sort if sort in known else None, descending=desc, limit=limit,
                aggregate=True, group_by=group if group in known else None,
                functions=_functions(known, picks))
    sql, expected = _both(container, ns, plan, memory)
    assert sql == expected
    _check_sums(expected, memory, usable)


@pytest.mark.parametrize("group", ["n", "t", "d"])
def test_sql_groups_past_fifty_equal_the_reference(container: bootstrap.Container, ns: str,
                                                   group: str) -> None:
    """60 keys of uneven counts (ties, -0 beside 0, documents without the key): the 50
    groups returned, their order and every function's result as the reference has them."""
    corpus = []
    for i in range(150):
        key = i % 60 if i % 7 else i % 13
        fields: dict[str, Any] = {
            "m": {"amount": f"{i}.{i % 3}", "currency": CURRENCIES[i % 2]},
            "n": -0.0 if i % 11 == 0 else float(key), "t": f"key {key:02}",
            "d": f"2024-{key % 12 + 1:02}-{key // 12 + 1:02}"}
        if i % 9 == 0:
            del fields[group]
        corpus.append((f"r{i}", "", fields))
    rev = {"n": "a", "t": "c", "d": "f"}[group] * 64
    _publish(container, ns, rev, corpus)
    memory = MemorySource(NAME, _records(rev, corpus))
    plan = Plan(fields=("n", "t"), sort_field="m", limit=10, aggregate=True, group_by=group,
                functions=(Function("count"), Function("sum", "m"), Function("avg", "m"),
                           Function("min", "m"), Function("max", "t"), Function("avg", "n")))
    sql, expected = _both(container, ns, plan, memory)
    assert expected["aggregates"]["groupCount"] > 50
    assert expected["aggregates"]["groupsTruncated"] is True
    assert sql == expected


def _publish(container: bootstrap.Container, ns: str, rev: str, corpus: Any) -> None:
    from context_service.domain.context import commands as c
    from context_service.domain.events import ADMIN
    from tests.projections.pack_support import WHEN
    if not _exists(container, ns):
        collection(container.contexts, NAME, rev, ns=ns)
    else:
        container.contexts.execute(ns, NAME, c.PublishRevision(
            actor=ADMIN, id=rev, created_at=WHEN, operation="sync"))
    publish(container.contexts, NAME, rev, _records(rev, corpus), ns=ns)
    head = container.store.head()
    for runner in container.runners.values():
        assert runner.wait_for(head, timeout=30)


def _exists(container: bootstrap.Container, ns: str) -> bool:
    with FieldReadsSql(container.datastore).session() as session:
        return session.current(ns, NAME) is not None


def _check_sums(body: dict[str, Any], memory: MemorySource, usable: list[Filter]) -> None:
    """Without groups, sums against exact references computed here from the raw values."""
    groups = body["aggregates"]["groups"]
    if body["aggregates"].get("groupBy") is not None or not groups:
        return
    matched = set(memory.matched(usable))
    for result in groups[0]["results"]:
        if result["op"] != "sum":
            continue
        stated = [s.value for d, s in memory.stated[result["field"]].items() if d in matched]
        if result["field"] == "n":
            want = math.fsum(stated) if stated else None  # type: ignore[arg-type]
            got = result["value"]
            assert (got is None and want is None) or float(bytes(got)) == want
        else:
            for entry in result["values"]:
                exact = sum((m.amount for m in stated if m.currency == entry["currency"]),
                            Decimal(0))
                assert Decimal(entry["amount"]) == exact

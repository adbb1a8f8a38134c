"""Field rules of ``fields/list`` and ``fields/query`` (agent-context-api §10.3, §10.4) over
the contract's request bodies, checked in the spec's order with its messages; the checked body
as a domain plan."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, time

from context_service.contract.agent import (
    FieldAggregate,
    ListFieldsRequest,
    QueryFieldsRequest,
)
from context_service.domain.fields.plan import (
    DEFAULT_LIMIT,
    FUNCTIONS,
    MAX_FIELDS,
    MAX_FILTERS,
    MAX_FUNCTIONS,
    MAX_LIMIT,
    OPERATORS,
    Filter,
    Function,
    Plan,
)
from context_service.http.agent.body import Violations, check_range

_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
OPERATOR_LIST = "must be eq, ne, lt, lte, gt, gte, contains, prefix or exists"
FUNCTION_LIST = "must be count, min, max, sum or avg"
# the names the studied-field routes' bodies had before they became the contract's
FieldsListRequest, FieldsQueryRequest = ListFieldsRequest, QueryFieldsRequest


def _collection(v: Violations, value: str | None) -> None:
    if value is None:
        v.add("$.collectionId", "is required")
    elif value == "":
        v.add("$.collectionId", "must not be empty")


def check_list(req: ListFieldsRequest) -> str:
    v = Violations()
    _collection(v, req.collection_id)
    v.raise_if_any()
    assert req.collection_id is not None
    return req.collection_id


def known_at_end(day: date) -> datetime:
    """``<knownAt>T23:59:59.999999Z``."""
    return datetime.combine(day, time(23, 59, 59, 999999), UTC)


def check_query(req: QueryFieldsRequest, now: datetime) -> tuple[str, Plan, date | None]:
    """The collection, the plan and ``knownAt``; raises every violated field rule."""
    v = Violations()
    _collection(v, req.collection_id)
    fields = req.fields or []
    if len(fields) > MAX_FIELDS:
        v.add("$.fields", f"must have at most {MAX_FIELDS} entries")
    else:
        for i, name in enumerate(fields):
            if name in fields[:i]:
                v.add(f"$.fields[{i}]", "is a duplicate")
    filters = req.filters or []
    if len(filters) > MAX_FILTERS:
        v.add("$.filters", f"must have at most {MAX_FILTERS} entries")
    else:
        for i, f in enumerate(filters):
            if f.field is None:
                v.add(f"$.filters[{i}].field", "is required")
            if f.op is None:
                v.add(f"$.filters[{i}].op", "is required")
            elif f.op not in OPERATORS:
                v.add(f"$.filters[{i}].op", OPERATOR_LIST)
    if req.sort is not None:
        if req.sort.field is None:
            v.add("$.sort.field", "is required")
        if req.sort.direction is not None and req.sort.direction not in ("asc", "desc"):
            v.add("$.sort.direction", "must be asc or desc")
    check_range(v, "$.limit", req.limit, 1, MAX_LIMIT)
    functions = _functions(v, req.aggregate)
    known = _known_at(v, req.known_at, now)
    if not fields and req.aggregate is None:
        v.add("$", "fields or aggregate is required")
    v.raise_if_any()
    assert req.collection_id is not None
    sort = req.sort
    return req.collection_id, Plan(
        fields=tuple(fields),
        filters=tuple(Filter(f.field or "", f.op or "", f.value) for f in filters),
        sort_field=sort.field if sort is not None else None,
        descending=sort is not None and sort.direction == "desc",
        limit=req.limit or DEFAULT_LIMIT, aggregate=req.aggregate is not None,
        group_by=req.aggregate.group_by if req.aggregate is not None else None,
        functions=functions), known


def _functions(v: Violations, aggregate: FieldAggregate | None) -> tuple[Function, ...]:
    if aggregate is None:
        return ()
    functions = aggregate.functions or []
    if not 1 <= len(functions) <= MAX_FUNCTIONS:
        v.add("$.aggregate.functions", f"must have 1 to {MAX_FUNCTIONS} entries")
        return ()
    for i, fn in enumerate(functions):
        if fn.op is None:
            v.add(f"$.aggregate.functions[{i}].op", "is required")
        elif fn.op not in FUNCTIONS:
            v.add(f"$.aggregate.functions[{i}].op", FUNCTION_LIST)
        elif fn.op != "count" and fn.field is None:
            v.add(f"$.aggregate.functions[{i}].field", "is required")
    return tuple(Function(fn.op or "", fn.field) for fn in functions)


def _known_at(v: Violations, value: str | None, now: datetime) -> date | None:
    if value is None:
        return None
    try:
        if _DATE.fullmatch(value) is None:
            raise ValueError(value)
        day = date.fromisoformat(value)
    except ValueError:
        v.add("$.knownAt", "must be a date YYYY-MM-DD")
        return None
    if day > now.astimezone(UTC).date():
        v.add("$.knownAt", "must not be later than today (UTC)")
        return None
    return day

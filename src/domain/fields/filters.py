"""Filters of a plan (§10.4) over one document's stated value (None: the document does not
state the field). The in-memory semantics; the SQL path must agree with it."""

from __future__ import annotations

from typing import Any

from context_service.domain.fields.plan import Filter
from context_service.domain.fields.values import Money, Value, parse


def matches(f: Filter, value: Value | None) -> bool:
    if f.op == "exists":
        return (value is not None) is f.value
    if value is None:
        return False
    if isinstance(value, Money):
        return _money(f, value)
    wanted = parse(_type_of(value), f.value)
    if f.op == "contains":
        assert isinstance(value, str) and isinstance(wanted, str)
        return wanted.lower() in value.lower()
    if f.op == "prefix":
        assert isinstance(value, str) and isinstance(wanted, str)
        return value.lower().startswith(wanted.lower())
    return _compare(f.op, value, wanted)


def _money(f: Filter, value: Money) -> bool:
    wanted = parse("money", f.value)
    assert isinstance(wanted, Money)
    if value.currency != wanted.currency:
        return f.op == "ne"
    return _compare(f.op, value.amount, wanted.amount)


def _compare(op: str, a: Any, b: Any) -> bool:
    match op:
        case "eq":
            return bool(a == b)
        case "ne":
            return bool(a != b)
        case "lt":
            return bool(a < b)
        case "lte":
            return bool(a <= b)
        case "gt":
            return bool(a > b)
        case "gte":
            return bool(a >= b)
    raise ValueError(op)


def _type_of(value: Value) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "text"
    return "date"

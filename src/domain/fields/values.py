"""Typed values of studied fields (§5.1), what a document states (§10), their JSON forms and
the orders plans sort and compare them by."""

from __future__ import annotations

from datetime import date
from decimal import Decimal
from typing import Any, NamedTuple

import msgspec

from context_service.domain.context.events import RecordField


class Money(NamedTuple):
    amount: Decimal
    text: str  # the amount as written
    currency: str


Value = float | Money | date | bool | str


class Stated(NamedTuple):
    """A document's value of one field: that of its first record carrying it."""

    document_id: str
    record_id: str
    value: Value
    span: tuple[int, int] | None
    quote: str | None  # the text the span covered in that record


def parse(type_: str, raw: object) -> Value:
    """The typed value of a field already checked against its type (§5.1)."""
    match type_:
        case "number":
            assert isinstance(raw, int | float)
            return float(raw)
        case "money":
            assert isinstance(raw, dict)
            return Money(Decimal(raw["amount"]), raw["amount"], raw["currency"])
        case "date":
            assert isinstance(raw, str)
            return date.fromisoformat(raw)
    assert isinstance(raw, bool | str)
    return raw


def stated(document_id: str, record_id: str, text: str, field: RecordField) -> Stated:
    span = field.span
    return Stated(document_id, record_id, parse(field.type, field.value),
                  None if span is None else (span.start, span.end),
                  None if span is None else text[span.start:span.end])


def format_number(value: float) -> str:
    """The shortest form that reads back as the same double (§1.8): ``3``, ``0.5``, ``1e-7``."""
    text = repr(value)
    mantissa, _, exponent = text.partition("e")
    if mantissa.endswith(".0"):
        mantissa = mantissa[:-2]
    if exponent:
        sign = "-" if exponent.startswith("-") else ""
        return f"{mantissa}e{sign}{exponent.lstrip('+-').lstrip('0') or '0'}"
    return mantissa


def number_json(value: float) -> msgspec.Raw:
    return msgspec.Raw(format_number(value).encode())


def value_json(value: Value) -> Any:
    """A value in its §5.1 JSON form (numbers in the shortest form, as raw JSON)."""
    if isinstance(value, bool | str):
        return value
    if isinstance(value, float):
        return number_json(value)
    if isinstance(value, Money):
        return {"amount": value.text, "currency": value.currency}
    return value.isoformat()


def order_key(value: Value) -> Any:
    """Ascending order within one type: numeric, calendar, false before true, code points;
    money by currency code, then amount."""
    if isinstance(value, Money):
        return (value.currency, value.amount)
    if isinstance(value, float) and value == 0:
        return 0.0  # -0 and 0 are one value
    return value

"""SQL pieces the field plans share (§10.4): the matched documents of a plan's filters as one
statement over ``agent_data``, the typed columns of a stating row and their decoding.

Field types are inlined as literals (they come from a fixed set) so that the typed partial
indexes apply; names and values are always parameters."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from context_service.domain.fields.plan import Filter
from context_service.domain.fields.values import Money, Stated, Value, parse

OPS = {"eq": "=", "ne": "<>", "lt": "<", "lte": "<=", "gt": ">", "gte": ">="}
TYPES = ("number", "money", "date", "boolean", "text")
# The text indexes key the first bytes of a value (a whole value may exceed a btree entry):
# byte order of prefixes agrees with byte order of values, so a comparison restated on the
# prefixes (implied by it, never narrower) lets the index scan a range; the exact one decides.
PREFIX_BYTES = 1024
_PREFIX_OPS = {"eq": "=", "lt": "<=", "lte": "<=", "gt": ">=", "gte": ">="}


def _prefixed(column: str, op: str, value: bytes) -> tuple[str, list[Any]]:
    """``column op value``, preceded by the same comparison on the indexed prefixes."""
    exact = f"f.{column} {OPS[op]} %s"
    if op not in _PREFIX_OPS:
        return exact, [value]
    return (f"substring(f.{column} from 1 for {PREFIX_BYTES}) {_PREFIX_OPS[op]} %s AND {exact}",
            [value[:PREFIX_BYTES], value])
# the columns a type's values are ordered by (money: by currency code, then amount)
ORDER_COLUMNS = {"number": ("number_value",), "money": ("money_currency", "money_amount"),
                 "date": ("date_value",), "boolean": ("boolean_value",), "text": ("text_key",)}
_COLUMN = {"number": "number_value", "date": "date_value", "boolean": "boolean_value"}
VALUE_COLUMNS = ("document_key", "record_key", "type", "number_value", "money_amount",
                 "money_text", "money_currency", "date_value", "boolean_value", "text_key",
                 "span_start", "span_end", "quote")


def utf8(value: str) -> bytes:
    return value.encode("utf-8", "surrogatepass")


def text(value: Any) -> str:
    return bytes(value).decode("utf-8", "surrogatepass")


def columns(alias: str) -> str:
    """The value columns of a stating row as ``alias.column``."""
    return ", ".join(f"{alias}.{c}" for c in VALUE_COLUMNS)


def stating(alias: str, type_: str | None = None) -> str:
    """The condition selecting one publication's (``%s``) stating rows of a name (``%s``)."""
    typed = f" AND {alias}.type = '{type_}'" if type_ is not None else ""
    assert type_ is None or type_ in TYPES
    return f"{alias}.publication = %s AND {alias}.stating AND {alias}.name = %s{typed}"


def _successor(prefix: bytes) -> bytes | None:
    """The smallest byte string greater than every string starting with ``prefix``."""
    trimmed = prefix.rstrip(b"\xff")
    if not trimmed:
        return None
    return trimmed[:-1] + bytes([trimmed[-1] + 1])


def predicate(f: Filter, type_: str) -> tuple[str, list[Any]]:
    """The condition on one stating row ``f`` for a filter other than ``exists``."""
    wanted = parse(type_, f.value)
    if isinstance(wanted, Money):
        if f.op == "ne":
            return ("(f.money_currency <> %s OR f.money_amount <> %s)",
                    [wanted.currency, wanted.amount])
        return (f"f.money_currency = %s AND f.money_amount {OPS[f.op]} %s",
                [wanted.currency, wanted.amount])
    if type_ == "text":
        assert isinstance(wanted, str)
        if f.op == "contains":
            return "position(%s in f.text_lower) > 0", [utf8(wanted.lower())]
        if f.op == "prefix":
            needle = utf8(wanted.lower())
            after = _successor(needle)
            # a range the text index can answer; exactly the strings starting with needle
            low, low_args = _prefixed("text_lower", "gte", needle)
            if after is None:
                return low, low_args
            high, high_args = _prefixed("text_lower", "lt", after)
            return f"{low} AND {high}", low_args + high_args
        return _prefixed("text_key", f.op, utf8(wanted))
    return f"f.{_COLUMN[type_]} {OPS[f.op]} %s", [wanted]


def matched_sql(publication: int, filters: Sequence[Filter],
                types: Mapping[str, str]) -> tuple[str, list[Any]]:
    """The keys (``document_key``) of the documents matching every filter: each filter is a
    (NOT) EXISTS on the document's stating row, so PostgreSQL joins them as it sees fit."""
    sql = "SELECT d.document_key FROM agent_data.field_documents d WHERE d.publication = %s"
    args: list[Any] = [publication]
    for f in filters:
        type_ = types[f.field]
        row = ("SELECT FROM agent_data.fields f WHERE f.document_key = d.document_key AND "
               + stating("f", type_))
        args += [publication, f.field]
        if f.op == "exists":
            sql += f" AND {'' if f.value else 'NOT '}EXISTS ({row})"
            continue
        condition, values = predicate(f, type_)
        sql += f" AND EXISTS ({row} AND {condition})"
        args += values
    return sql, args


def value_of(r: Mapping[str, Any]) -> Value:
    match r["type"]:
        case "number":
            return float(r["number_value"])
        case "money":
            return Money(r["money_amount"], r["money_text"], r["money_currency"])
        case "date":
            return r["date_value"]  # type: ignore[no-any-return]
        case "boolean":
            return bool(r["boolean_value"])
    return text(r["text_key"])


def stated_of(r: Mapping[str, Any]) -> Stated:
    """A stating row (``VALUE_COLUMNS``) as the document's value."""
    doc = text(r["document_key"])
    span = None if r["span_start"] is None else (r["span_start"], r["span_end"])
    return Stated(doc, text(r["record_key"]), value_of(r), span,
                  None if r["quote"] is None else text(r["quote"]))

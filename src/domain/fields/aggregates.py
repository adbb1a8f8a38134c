"""Aggregates of a plan (§10.4) over the matched documents: groups by a field's value (at most
50 returned), and count/min/max/sum/avg with exact money per currency and correctly rounded
number sums."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from decimal import ROUND_HALF_EVEN, Decimal, localcontext
from fractions import Fraction
from typing import Any

from context_service.domain.fields.citation import cited
from context_service.domain.fields.plan import MAX_GROUPS, Function
from context_service.domain.fields.source import Cite, Json
from context_service.domain.fields.values import Money, Stated, Value, order_key, value_json

__all__ = ["Cite", "aggregate", "groups_of", "money_avg", "money_avg_of", "money_sum",
           "number_result", "plain"]


def groups_of(documents: Sequence[str], keys: Mapping[str, Stated] | None,
              ) -> tuple[list[tuple[Value | None, list[str]]], int]:
    """The groups in answer order (count descending, key ascending, null last) and how many
    there are; without ``keys`` one group of every document."""
    if keys is None:
        return [(None, list(documents))], 1
    grouped: dict[Any, tuple[Value | None, list[str]]] = {}
    for doc in documents:
        found = keys.get(doc)
        value = None if found is None else found.value
        if isinstance(value, float) and value == 0:
            value = 0.0
        grouped.setdefault(value, (value, []))[1].append(doc)
    ordered = sorted(grouped.values(),
                     key=lambda g: (-len(g[1]), g[0] is None,
                                    order_key(g[0]) if g[0] is not None else 0))
    return ordered, len(ordered)


def aggregate(documents: Sequence[str], group_by: str | None,
              functions: Sequence[Function], values: Mapping[str, Mapping[str, Stated]],
              types: Mapping[str, str], cite: Cite) -> Json:
    """``values``: per field named by ``group_by`` and ``functions``, the matched documents'
    stated values; ``types``: the fields' types."""
    groups, total = groups_of(documents, values[group_by] if group_by is not None else None)
    out_groups = []
    for key, docs in groups[:MAX_GROUPS]:
        group: Json = {}
        if group_by is not None:
            group["key"] = None if key is None else value_json(key)
        group["count"] = len(docs)
        group["results"] = [_result(fn, docs, values, types, cite) for fn in functions]
        out_groups.append(group)
    out: Json = {}
    if group_by is not None:
        out["groupBy"] = group_by
    out.update({"groups": out_groups, "groupCount": total, "groupsTruncated": total > MAX_GROUPS})
    return out


def _result(fn: Function, docs: Sequence[str], values: Mapping[str, Mapping[str, Stated]],
            types: Mapping[str, str], cite: Cite) -> Json:
    out: Json = {"op": fn.op}
    if fn.field is None:
        out["value"] = len(docs)
        return out
    out["field"] = fn.field
    of = values[fn.field]
    stated = [of[d] for d in sorted(docs) if d in of]
    if fn.op == "count":
        out["value"] = len(stated)
        return out
    if types[fn.field] == "money":
        out["values"] = _money(fn.op, stated, cite)
        return out
    if fn.op in ("sum", "avg"):
        out["value"] = number_result(fn.op, [s.value for s in stated])  # type: ignore[misc]
        return out
    best = extreme(fn.op, stated)
    if best is None:
        out["value"] = None
        return out
    out["value"] = value_json(best.value)
    out["documentId"] = best.document_id
    return cited(out, best, cite)


def extreme(op: str, stated: Sequence[Stated]) -> Stated | None:
    """The smallest (``min``) or largest (``max``) value; the smallest documentId on ties."""
    best: Stated | None = None
    for s in stated:
        if best is None:
            best = s
            continue
        a, b = order_key(s.value), order_key(best.value)
        if (a < b if op == "min" else a > b) or (a == b and s.document_id < best.document_id):
            best = s
    return best


def fsum(values: Sequence[float]) -> float | None:
    """The correctly rounded sum; None when it lies beyond every double."""
    try:
        return math.fsum(values)
    except OverflowError:
        try:
            return float(sum(Fraction(v) for v in values))
        except OverflowError:
            return None


def number_result(op: str, values: Sequence[float]) -> Any:
    """``sum`` or ``avg`` of number values: the correctly rounded sum or it divided by the
    count, in JSON form; None without values or beyond every double."""
    if not values:
        return None
    total = fsum(values)
    if total is None:
        return None
    return value_json(total if op == "sum" else total / len(values))


def scale(m: Money) -> int:
    _, _, fraction = m.text.partition(".")
    return len(fraction)


def plain(amount: Decimal, digits: int) -> str:
    """``amount`` with exactly ``digits`` fractional digits, never an exponent nor ``-0``."""
    text = format(amount, f".{digits}f")
    return text[1:] if text.startswith("-") and amount == 0 else text


def money_sum(amounts: Sequence[Money]) -> tuple[Decimal, int]:
    with localcontext() as ctx:
        ctx.prec = 200
        return sum((m.amount for m in amounts), Decimal(0)), max(scale(m) for m in amounts)


def money_avg(amounts: Sequence[Money]) -> str:
    total, digits = money_sum(amounts)
    return money_avg_of(total, len(amounts), digits)


def money_avg_of(total: Decimal, count: int, digits: int) -> str:
    """The exact quotient ``total / count`` rounded half-even to ``digits`` + 2 places."""
    with localcontext() as ctx:
        ctx.prec = 200
        quotient = (total / count).quantize(Decimal(1).scaleb(-(digits + 2)),
                                            rounding=ROUND_HALF_EVEN)
    return plain(quotient, digits + 2)


def _money(op: str, stated: Sequence[Stated], cite: Cite) -> list[Json]:
    by_currency: dict[str, list[Stated]] = {}
    for s in stated:
        assert isinstance(s.value, Money)
        by_currency.setdefault(s.value.currency, []).append(s)
    out = []
    for currency in sorted(by_currency):
        members = by_currency[currency]
        amounts = [s.value for s in members]
        entry: Json = {"currency": currency}
        if op == "sum":
            total, digits = money_sum(amounts)  # type: ignore[arg-type]
            entry["amount"] = plain(total, digits)
        elif op == "avg":
            entry["amount"] = money_avg(amounts)  # type: ignore[arg-type]
        else:
            best = extreme(op, members)
            assert best is not None and isinstance(best.value, Money)
            entry["amount"] = best.value.text
            entry["documentId"] = best.document_id
            cited(entry, best, cite)
        out.append(entry)
    return out

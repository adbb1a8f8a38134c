"""A fields/query plan (§10.4) and its plan rules, judged against the field types of the
collection at the answer's position: each violation as ``(path, message)``, in rule order."""

from __future__ import annotations

from collections.abc import Mapping

import msgspec

from context_service.domain.context.events import RecordField
from context_service.domain.context.index_checks import value_matches
from context_service.domain.echoed import quoted

OPERATORS = ("eq", "ne", "lt", "lte", "gt", "gte", "contains", "prefix", "exists")
FUNCTIONS = ("count", "min", "max", "sum", "avg")
MAX_FIELDS, MAX_FILTERS, MAX_FUNCTIONS, MAX_LIMIT, DEFAULT_LIMIT = 6, 6, 6, 200, 50
MAX_GROUPS = 50
_ORDERED = ("eq", "ne", "lt", "lte", "gt", "gte", "exists")
APPLIES: dict[str, tuple[str, ...]] = {
    "number": _ORDERED, "money": _ORDERED, "date": _ORDERED,
    "boolean": ("eq", "ne", "exists"),
    "text": ("eq", "ne", "contains", "prefix", "exists"),
}
FUNCTION_TYPES: dict[str, tuple[str, ...]] = {
    "count": ("number", "money", "date", "boolean", "text"),
    "sum": ("number", "money"), "avg": ("number", "money"),
    "min": ("number", "money", "date", "text"), "max": ("number", "money", "date", "text"),
}


class Filter(msgspec.Struct, frozen=True):
    field: str
    op: str
    value: object


class Function(msgspec.Struct, frozen=True):
    op: str
    field: str | None = None


class Plan(msgspec.Struct, frozen=True, kw_only=True):
    fields: tuple[str, ...] = ()
    filters: tuple[Filter, ...] = ()
    sort_field: str | None = None
    descending: bool = False
    limit: int = DEFAULT_LIMIT
    aggregate: bool = False
    group_by: str | None = None
    functions: tuple[Function, ...] = ()

    def named(self) -> set[str]:
        """Every field the plan names (its coverage lines are these fields')."""
        names = set(self.fields) | {f.field for f in self.filters}
        names |= {f.field for f in self.functions if f.field is not None}
        if self.sort_field is not None:
            names.add(self.sort_field)
        if self.group_by is not None:
            names.add(self.group_by)
        return names


def plan_violations(plan: Plan, types: Mapping[str, str]) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    seen: set[str] = set()

    def add(path: str, message: str) -> None:
        if path not in seen:
            seen.add(path)
            out.append((path, message))

    named = [(f"$.fields[{i}]", name) for i, name in enumerate(plan.fields)]
    named += [(f"$.filters[{i}].field", f.field) for i, f in enumerate(plan.filters)]
    if plan.sort_field is not None:
        named.append(("$.sort.field", plan.sort_field))
    if plan.group_by is not None:
        named.append(("$.aggregate.groupBy", plan.group_by))
    named += [(f"$.aggregate.functions[{i}].field", f.field)
              for i, f in enumerate(plan.functions) if f.field is not None]
    for path, name in named:
        if name not in types:
            add(path, f"unknown field {quoted(name)}")
    for i, f in enumerate(plan.filters):
        type_ = types.get(f.field)
        if type_ is None:
            continue
        if f.op not in APPLIES[type_]:
            add(f"$.filters[{i}].op", f"operator {f.op} does not apply to {type_} fields")
        elif not filter_value_ok(type_, f.op, f.value):
            add(f"$.filters[{i}].value",
                f"value must be a {'boolean' if f.op == 'exists' else type_} value")
    for i, fn in enumerate(plan.functions):
        type_ = types.get(fn.field) if fn.field is not None else None
        if type_ is not None and type_ not in FUNCTION_TYPES[fn.op]:
            add(f"$.aggregate.functions[{i}].op", f"{fn.op} does not apply to {type_} fields")
    if plan.group_by is not None and types.get(plan.group_by) == "money":
        add("$.aggregate.groupBy", "cannot group by a money field")
    return out


def filter_value_ok(type_: str, op: str, value: object) -> bool:
    if op == "exists":
        return isinstance(value, bool)
    if value is None:
        return False
    return value_matches(RecordField(name="", type=type_, value=value))

"""Parameters bound as their declared types and result values converted to JSON (spec 11.4)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import date, datetime
from decimal import Decimal
from typing import Any

from psycopg import postgres
from psycopg.adapt import AdaptersMap, Dumper
from psycopg.types.string import TextLoader

from context_service.domain.query_template.events import Parameter
from context_service.domain.values import format_timestamp

SQL_TYPES = {"text": "text", "integer": "int8", "number": "numeric", "boolean": "bool",
             "date": "date", "timestamp": "timestamptz"}


def declared(parameters: tuple[Parameter, ...]) -> str:
    """The type list of ``PREPARE name(<types>)``; "" without parameters."""
    return ", ".join(SQL_TYPES[p.type] for p in parameters)


class Bound:
    """A parameter value as the input text of its declared type (None: NULL)."""

    type = ""

    def __init__(self, text: str | None) -> None:
        self.text = text


def _dumper(sql_type: str) -> type[Dumper]:
    class BoundDumper(Dumper):
        """Sends the text with the declared type's oid, so the server parses the statement
        with exactly the declared parameter types (a NULL too)."""

        oid = postgres.types[sql_type].oid

        def dump(self, obj: Any) -> bytes | None:
            return None if obj.text is None else obj.text.encode()

    return BoundDumper


_BOUND: dict[str, type[Bound]] = {
    kind: type(f"Bound_{kind}", (Bound,), {"type": kind}) for kind in SQL_TYPES}


# loaded as their text output (spec 11.4 "anything else"): psycopg would make Python objects
_AS_TEXT = ("interval", "time", "timetz", "bytea", "uuid", "inet", "cidr", "macaddr", "money",
            "int4range", "int8range", "numrange", "daterange", "tsrange", "tstzrange", "xml",
            "int4multirange", "int8multirange", "nummultirange", "datemultirange",
            "tsmultirange", "tstzmultirange", "hstore", "point", "tsvector", "tsquery")


def register_bound(adapters: AdaptersMap) -> None:
    """Dumpers of the bound parameters and text loaders of the types shown as text."""
    for kind, cls in _BOUND.items():
        adapters.register_dumper(cls, _dumper(SQL_TYPES[kind]))
    for name in _AS_TEXT:
        info = postgres.types.get(name)
        if info is None:
            continue
        for oid in (info.oid, info.array_oid):
            if oid:
                adapters.register_loader(oid, TextLoader)


def bound(parameters: tuple[Parameter, ...], values: Sequence[Any]) -> list[Bound]:
    return [_BOUND[p.type](bound_text(v)) for p, v in zip(parameters, values, strict=True)]


def bound_text(value: Any) -> str | None:
    """A validated JSON value as the input text of its declared type."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    return str(value)


# result types psycopg loads as the JSON value already (str, int, bool or None)
_AS_IS = frozenset(postgres.types[name].oid for name in (
    "text", "varchar", "bpchar", "name", "int2", "int4", "int8", "bool"))


def json_rows(rows: Sequence[Sequence[Any]], oids: Sequence[int]) -> list[list[Any]]:
    """Loaded result rows as the response shows them; columns of ``_AS_IS`` types untouched."""
    convert = [i for i, oid in enumerate(oids) if oid not in _AS_IS]
    out = [list(row) for row in rows]
    for row in out if convert else ():
        for i in convert:
            row[i] = json_value(row[i])
    return out


def json_value(value: Any) -> Any:
    """One loaded result value as the response shows it."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        return value
    if isinstance(value, Decimal):
        return format(value, "f")
    if isinstance(value, datetime):
        if value.tzinfo is None:
            return value.isoformat()
        return format_timestamp(value)
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, list):
        return [json_value(v) for v in value]
    if isinstance(value, dict):
        return value  # json/jsonb, loaded as the JSON value
    return str(value)

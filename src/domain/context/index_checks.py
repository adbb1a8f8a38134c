"""The domain checks of ``PUT .../query-index`` (api 1.7 checks 1-4, agent api 5.1 checks 5-9),
each over the whole body before the next; the first failure wins."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from datetime import date

from context_service.domain.context.events import QueryRecord, RecordField
from context_service.domain.errors import ContextInvalidError
from context_service.domain.values import quote as quoted

QUERYABLE_TYPES = ("memory", "knowledge")
FIELD_TYPES = ("number", "money", "date", "boolean", "text")
MAX_FIELDS = 50
MAX_FACT_KEY = 200
MAX_TEXT_VALUE = 1000
_FIELD_NAME = re.compile(r"[a-z][a-z0-9_]{0,62}")
_AMOUNT = re.compile(r"-?[0-9]{1,20}(\.[0-9]{1,18})?")
_CURRENCY = re.compile(r"[A-Z]{3}")
_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")


def check_records(records: Sequence[QueryRecord], *, name: str, type: str, revision: str,
                  blank_fact_key: bool = False,
                  known_types: Mapping[str, str] | None = None) -> dict[str, str]:
    """Checks 3-9 over ``records``; returns the field types of the index (name -> type).

    ``blank_fact_key``: a record sent ``factKey: ""`` (present but blank, unlike absent).
    ``known_types``: the field types of parts staged before (check 9 spans the whole index).
    """
    for record in records:
        if not record.id or not record.text.strip():
            raise ContextInvalidError("query records require id and text")
    for record in records:
        if record.context != name or record.type != type or record.revision != revision:
            raise ContextInvalidError("query record identity does not match its context")
    for record in records:
        if (record.valid_from is not None and record.valid_to is not None
                and record.valid_to <= record.valid_from):
            raise ContextInvalidError("query record validTo must be after validFrom")
    for record in records:
        ids = record.supersedes
        if any(not i for i in ids) or len(set(ids)) != len(ids) or record.id in ids:
            raise ContextInvalidError("query record supersedes must list other record ids")
    if blank_fact_key or any(
            r.fact_key and (not r.fact_key.strip() or len(r.fact_key) > MAX_FACT_KEY)
            for r in records):
        raise ContextInvalidError("query record factKey must be 1 to 200 characters")
    _check_fields(records)
    return _field_types(records, known_types or {})


def _check_fields(records: Sequence[QueryRecord]) -> None:
    for record in records:
        names = [f.name for f in record.fields]
        if (len(names) > MAX_FIELDS or len(set(names)) != len(names)
                or not all(_FIELD_NAME.fullmatch(n) for n in names)):
            raise ContextInvalidError(
                "query record fields need distinct names matching ^[a-z][a-z0-9_]{0,62}$"
                " (at most 50)")
    with_fields = [r for r in records if r.fields]
    for record in with_fields:
        for field in record.fields:
            if field.type not in FIELD_TYPES:
                raise ContextInvalidError(f"field {quoted(field.name)} has an unsupported type")
    for record in with_fields:
        for field in record.fields:
            if not value_matches(field):
                raise ContextInvalidError(
                    f"field {quoted(field.name)} has a value that does not match its type")
    for record in with_fields:
        length = len(record.text)
        for field in record.fields:
            span = field.span
            if span is not None and (span.start < 0 or span.end <= span.start
                                     or span.end > length):
                raise ContextInvalidError(
                    f"field {quoted(field.name)} has a span outside the record text")


def _field_types(records: Sequence[QueryRecord], known: Mapping[str, str]) -> dict[str, str]:
    types = dict(known)
    for record in records:
        for field in record.fields:
            if types.setdefault(field.name, field.type) != field.type:
                raise ContextInvalidError(
                    f"field {quoted(field.name)} has more than one type in this index")
    return types


def value_matches(field: RecordField) -> bool:
    value = field.value
    match field.type:
        case "number":
            if isinstance(value, bool) or not isinstance(value, int | float):
                return False
            try:
                return math.isfinite(float(value))
            except OverflowError:  # an integer beyond every double
                return False
        case "money":
            return (isinstance(value, dict) and set(value) == {"amount", "currency"}
                    and isinstance(value["amount"], str) and isinstance(value["currency"], str)
                    and _AMOUNT.fullmatch(value["amount"]) is not None
                    and _CURRENCY.fullmatch(value["currency"]) is not None)
        case "date":
            if not isinstance(value, str) or _DATE.fullmatch(value) is None:
                return False
            try:
                date.fromisoformat(value)
            except ValueError:
                return False
            return True
        case "boolean":
            return isinstance(value, bool)
        case "text":
            return isinstance(value, str) and len(value) <= MAX_TEXT_VALUE
    return False


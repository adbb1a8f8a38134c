"""Validation of a template at registration (spec 11.2): request checks 1-6 (bare messages),
then the statement checks 7-8; check 9 (the database) is the caller's ``DatabaseCheck``."""

from __future__ import annotations

import re
from datetime import date, datetime, timedelta
from decimal import Decimal

from context_service.domain.echoed import cut
from context_service.domain.errors import QueryTemplateInvalidError, QueryTemplateRefusedError
from context_service.domain.query_template.commands import TemplateDraft
from context_service.domain.query_template.events import PARAMETER_TYPES, Parameter
from context_service.domain.query_template.placeholders import scan, skip_trivia
from context_service.domain.values import is_dns_label, quote

MAX_DESCRIPTION, MAX_SQL, MAX_PARAMETERS = 1000, 20000, 20
_PARAMETER_NAME = re.compile(r"[a-z_][a-z0-9_]{0,62}")
_KEYWORD = re.compile(r"(select|with)(?![A-Za-z0-9_$\u0080-\uffff])", re.IGNORECASE)
_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
# an offset's minutes are 00-59 (RFC 3339); Python would read ``+05:60`` as ``+06:00``
_TIMESTAMP = re.compile(r"([0-9]{4}-[0-9]{2}-[0-9]{2})[Tt ]([0-9]{2}:[0-9]{2}:[0-9]{2})"
                        r"(\.[0-9]+)?([Zz]|[+-][0-9]{2}:[0-5][0-9])")
_CYCLE = 400  # years after which the Gregorian calendar repeats itself
INT_MIN, INT_MAX = -(2**63), 2**63 - 1


def is_form(kind: str, value: object) -> bool:
    """Whether a JSON value is of the parameter type's form (spec 11.4 table)."""
    match kind:
        case "text":
            return isinstance(value, str)
        case "integer":
            return (isinstance(value, int) and not isinstance(value, bool)
                    and INT_MIN <= value <= INT_MAX)
        case "number":  # a Decimal: a JSON number kept as its decimal text
            if isinstance(value, Decimal):
                return value.is_finite()
            return isinstance(value, int | float) and not isinstance(value, bool)
        case "boolean":
            return isinstance(value, bool)
        case "date":
            return isinstance(value, str) and parse_date(value) is not None
        case "timestamp":
            return isinstance(value, str) and parse_timestamp(value) is not None
    return False


def parse_date(text: str) -> date | None:
    if _DATE.fullmatch(text) is None:
        return None
    try:
        return date.fromisoformat(text)
    except ValueError:
        return None


def parse_timestamp(text: str) -> datetime | None:
    if _TIMESTAMP.fullmatch(text) is None:
        return None
    try:
        return datetime.fromisoformat(text.replace("z", "Z").replace("Z", "+00:00"))
    except ValueError:
        return None


def utc_text(text: str) -> str:
    """A timestamp of the ``timestamp`` form as the same instant written in UTC, its fraction
    digits kept (``2024-01-01T10:00:00.5+20:00`` -> ``2023-12-31T14:00:00.5Z``): every offset
    RFC 3339 allows, also those beyond what the database reads (+-15:59), and instants before
    year 1 (``... BC``) or after 9999 that an offset moves a date of the form to."""
    found = _TIMESTAMP.fullmatch(text)
    assert found is not None and parse_timestamp(text) is not None, text
    day, clock, fraction, zone = found.groups()
    offset = timedelta(0)
    if zone not in ("Z", "z"):
        offset = timedelta(hours=int(zone[1:3]), minutes=int(zone[4:6]))
        offset = -offset if zone[0] == "-" else offset
    local = datetime.fromisoformat(f"{day}T{clock}")
    shift = _CYCLE if local.year == 1 else -_CYCLE if local.year == 9999 else 0
    at = local.replace(year=local.year + shift) - offset  # the same calendar, 400 years away
    year, era = at.year - shift, ""
    if year < 1:
        year, era = 1 - year, " BC"
    return (f"{year:04d}-{at.month:02d}-{at.day:02d}T{at.hour:02d}:{at.minute:02d}:"
            f"{at.second:02d}{fraction or ''}Z{era}")


def validate_request(template_id: str, draft: TemplateDraft) -> None:
    if not is_dns_label(template_id):
        raise QueryTemplateInvalidError("query template id must be a lowercase Kubernetes name")
    if not draft.description.strip() or len(draft.description) > MAX_DESCRIPTION:
        raise QueryTemplateInvalidError(
            "query template description must be 1 to 1000 characters")
    if not draft.sql.strip() or len(draft.sql) > MAX_SQL:
        raise QueryTemplateInvalidError("query template sql must be 1 to 20000 characters")
    names = [p.name for p in draft.parameters]
    if (len(names) > MAX_PARAMETERS or len(set(names)) != len(names)
            or not all(_PARAMETER_NAME.fullmatch(n) for n in names)):
        raise QueryTemplateInvalidError(
            "query template parameter names must be distinct and match"
            " ^[a-z_][a-z0-9_]{0,62}$ (at most 20)")
    for p in draft.parameters:
        _parameter(p)
    if not 1 <= draft.max_rows <= 1000:
        raise QueryTemplateInvalidError("maxRows must be between 1 and 1000")
    if not 100 <= draft.timeout_ms <= 10000:
        raise QueryTemplateInvalidError("timeoutMs must be between 100 and 10000")


def _parameter(p: Parameter) -> None:
    if p.type not in PARAMETER_TYPES:
        raise QueryTemplateInvalidError(
            f"query template parameter {quote(p.name)} has an unsupported type")
    if p.required and p.default is not None:
        raise QueryTemplateInvalidError(
            f"query template parameter {quote(p.name)} cannot be required and have a default")
    if p.default is not None and not is_form(p.type, p.default):
        raise QueryTemplateInvalidError(
            f"query template parameter {quote(p.name)} has a default that does not match"
            " its type")


def rewrite(draft: TemplateDraft) -> str:
    """Checks 7-8; the statement with ``$k`` placeholders."""
    sql = draft.sql
    if _KEYWORD.match(sql, skip_trivia(sql)) is None:
        raise QueryTemplateRefusedError("sql must be a single SELECT or WITH statement")
    found = scan(sql)
    if found.positional:
        raise QueryTemplateRefusedError("sql must use :name placeholders")
    positions = {p.name: k for k, p in enumerate(draft.parameters, start=1)}
    for name in found.placeholders:
        if name not in positions:
            raise QueryTemplateRefusedError(
                f"placeholder \":{cut(name)}\" is not a declared parameter")  # cut: 0059
    used = set(found.placeholders)
    for p in draft.parameters:
        if p.name not in used:
            raise QueryTemplateRefusedError(f"parameter {quote(p.name)} is not used")
    return found.rewritten(positions)

"""Check 9 of a template run (spec 11.4): the request's parameters against the template's
declared ones, as ``VALIDATION_ERROR`` details; the bound values in declaration order."""

from __future__ import annotations

from typing import Any

from context_service.domain.query_template.events import Parameter
from context_service.domain.query_template.validation import is_form, utc_text
from context_service.http.agent.body import Violations

FORMS = {"text": "a string", "integer": "an integer", "number": "a number",
         "boolean": "a boolean", "date": "a date YYYY-MM-DD",
         "timestamp": "an RFC 3339 timestamp with a zone"}


def check_parameters(declared: tuple[Parameter, ...], given: dict[str, Any]) -> list[Any]:
    """Unknown keys first (in key order), then the declared parameters in order; ``null``
    counts as absent, an absent optional parameter takes its default, else SQL NULL."""
    violations = Violations()
    names = {p.name for p in declared}
    for key in given:
        if key not in names:
            violations.add(f"$.parameters.{key}", "is not a parameter of this template")
    values: list[Any] = []
    for p in declared:
        value = given.get(p.name)
        path = f"$.parameters.{p.name}"
        if value is None:
            if p.required:
                violations.add(path, "is required")
            values.append(p.default)
        elif not is_form(p.type, value):
            violations.add(path, f"must be {FORMS[p.type]}")
            values.append(None)
        else:
            values.append(value)
    violations.raise_if_any()
    return values


def bound_values(declared: tuple[Parameter, ...], values: list[Any]) -> list[Any]:
    """The checked values as the sandbox binds them (the hash keeps them as sent): a text's
    NUL as U+FFFD, as the agent views hold such strings (a text value would end at the NUL),
    and a timestamp as its instant in UTC (the database refuses offsets beyond +-15:59, RFC
    3339 allows up to +-23:59)."""
    return [_bound(p.type, v) for p, v in zip(declared, values, strict=True)]


def _bound(kind: str, value: Any) -> Any:
    if kind == "text" and isinstance(value, str):
        return value.replace("\x00", "\ufffd")
    if kind == "timestamp" and isinstance(value, str):
        return utc_text(value)
    return value

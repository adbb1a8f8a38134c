"""Facts about query templates and their runs (spec 11, 12.2); data fields in the spec's order."""

from __future__ import annotations

from typing import Any

import msgspec

from context_service.domain.events import Event

PARAMETER_TYPES = ("text", "integer", "number", "boolean", "date", "timestamp")


class Parameter(msgspec.Struct, frozen=True, kw_only=True):
    name: str = ""
    type: str = ""
    required: bool = False
    default: Any = None  # the JSON value; None when absent (a null default is no default)


class QueryTemplateVersion(Event, frozen=True):
    id: str
    version: int
    description: str
    sql: str
    parameters: tuple[Parameter, ...]
    max_rows: int
    timeout_ms: int


class QueryTemplateRegistered(QueryTemplateVersion, frozen=True,
                              tag="QueryTemplateRegistered"):
    """Version 1."""


class QueryTemplateReplaced(QueryTemplateVersion, frozen=True, tag="QueryTemplateReplaced"):
    """A new version replacing the whole content."""


class QueryTemplateRetired(Event, frozen=True, tag="QueryTemplateRetired"):
    """Final: the id stays taken; the template can no longer be run or approved."""

    id: str
    version: int


class QueryTemplateRun(Event, frozen=True, tag="QueryTemplateRun"):
    """One run, whatever its outcome; the parameters only as a hash of their bound values."""

    run_id: str
    template_id: str
    template_version: int
    context_set_id: str
    credential_id: str
    created_by: str
    parameters_sha256: str
    outcome: str  # ok, timeout or failed
    sqlstate: str
    row_count: int
    truncated: bool
    duration_ms: int


QUERY_TEMPLATE_EVENTS: tuple[type[Event], ...] = (QueryTemplateRegistered,
                                                  QueryTemplateReplaced, QueryTemplateRetired)
QUERY_RUN_EVENTS: tuple[type[Event], ...] = (QueryTemplateRun,)

"""``POST /api/agent/v1/query-templates/run`` (agent-context-api.md §11.4): checks 1-9, then
the run in the sandbox, recorded as ``QueryTemplateRun`` whatever its outcome; a run the
sandbox does not admit (503, issue 24) never ran and is not recorded. Agents never see SQL:
errors carry the database's primary message and SQLSTATE only."""

from __future__ import annotations

import hashlib
import secrets
import time
from collections.abc import Callable
from datetime import datetime
from decimal import Decimal
from typing import Any

import msgspec
from litestar import Request, Response, post

from context_service.contract.agent import (
    RunQueryTemplateRequest,
    TemplateRows,
)
from context_service.contract.agent_errors import (
    SHARED_ERRORS,
    AgentInvalidRequest,
    QueryFailed,
    QueryInternalError,
    QueryTimedOut,
)
from context_service.domain.echoed import told
from context_service.domain.errors import SandboxNotConfiguredError
from context_service.domain.query_template.commands import TemplateDraft
from context_service.domain.query_template.events import Parameter, QueryTemplateRun
from context_service.domain.query_template.state import QueryTemplateState
from context_service.domain.query_template.validation import rewrite
from context_service.http.agent.body import Violations, decode
from context_service.http.agent.errors import POSITION_HEADER, ApiError, Violation, api_json
from context_service.http.agent.late_body import PendingBody, body_after_pipeline
from context_service.http.agent.pack_flow import Access, chosen_set
from context_service.http.agent.pipeline import AgentCaller, agent_services, authenticate
from context_service.http.agent.template_values import bound_values, check_parameters
from context_service.http.common import services
from context_service.http.ports import QueryTemplateServices
from context_service.http.refusals import refusals

PATH = "/api/agent/v1/query-templates/run"
SCOPE = "queries:run"
VIEWS = ("context_catalog", "context_sets", "agent_data")
ERRORS = refusals(
    {400: "INVALID_REQUEST, VALIDATION_ERROR or AGENT_QUERY_FAILED (details.sqlstate)",
     401: "UNAUTHORIZED or EXPIRED_CREDENTIAL",
     403: "FORBIDDEN (scope; a bound credential naming another context set)",
     404: "NOT_FOUND: context set not found, query template not found",
     429: "RATE_LIMITED (Retry-After)",
     500: "INTERNAL_ERROR: query template sandbox is not configured: <point>",
     503: "AGENT_QUERY_CAPACITY_EXHAUSTED (Retry-After): every run slot of the service"
          " or of the workspace is taken",
     504: "AGENT_QUERY_TIMEOUT"},
    {**{status: SHARED_ERRORS[status] for status in (401, 403, 404, 429)},
     400: AgentInvalidRequest | QueryFailed, 500: QueryInternalError, 504: QueryTimedOut})
_NOT_FOUND = ApiError(404, "NOT_FOUND", "query template not found")
RETRY_AFTER_S = 1


def capacity_exhausted() -> ApiError:
    """A run that was not admitted: refused at once, never queued in a request thread."""
    return ApiError(503, "AGENT_QUERY_CAPACITY_EXHAUSTED",
                    f"query templates are at capacity; retry after {RETRY_AFTER_S} seconds",
                    None, {"Retry-After": str(RETRY_AFTER_S)})


def _templates(request: Request[Any, Any, Any]) -> QueryTemplateServices:
    found = services(request).query_templates
    assert found is not None, "query templates are not configured"
    return found


class _ExactParameters(msgspec.Struct):
    """The body's ``parameters`` again, every non-integer number as its decimal text."""

    parameters: dict[str, Any] | None = None


# a ``number`` is bound "from the number's decimal text" (spec 11.4): never through a double
_EXACT = msgspec.json.Decoder(_ExactParameters, float_hook=Decimal)
# the bound values' JSON with numbers written as sent (a Decimal as a number, not a string)
_HASHED = msgspec.json.Encoder(decimal_format="number")


def _checked_body(pending: PendingBody) -> tuple[RunQueryTemplateRequest, dict[str, Any]]:
    """The body after its field rules, and its parameters with numbers as sent."""
    raw = pending.read()
    body = decode(raw, RunQueryTemplateRequest)
    violations = Violations()
    if body.template_id is None:
        violations.add("$.templateId", "is required")
    elif body.template_id == "":
        violations.add("$.templateId", "must not be empty")
    if body.context_set_id == "":
        violations.add("$.contextSetId", "must not be empty")
    violations.raise_if_any()
    return body, (_EXACT.decode(raw).parameters or {}) if body.parameters else {}


def _approved(templates: QueryTemplateServices, workspace: str, template_id: str,
              approved: tuple[str, ...]) -> QueryTemplateState:
    """Check 8: listed by the active set's current version and active (read from the log)."""
    if template_id not in approved:
        raise _NOT_FOUND
    state = templates.commands.load(workspace, template_id)[1]
    if not state.active:
        raise _NOT_FOUND
    return state


def parameters_sha256(parameters: tuple[Parameter, ...], values: list[Any]) -> str:
    """SHA-256 of the compact JSON object of the bound values, in declaration order."""
    bound = {p.name: v for p, v in zip(parameters, values, strict=True)}
    return hashlib.sha256(_HASHED.encode(bound)).hexdigest()


@post(PATH, status_code=200, opt={"body": RunQueryTemplateRequest}, responses=ERRORS)
@body_after_pipeline
def run_query_template(request: Request[Any, Any, Any],
                       body: PendingBody) -> Response[TemplateRows]:
    """Run an approved template by id with typed parameters; rows back, never SQL."""
    caller = authenticate(request, SCOPE, VIEWS)
    checked, parameters = _checked_body(body)
    assert checked.template_id is not None
    templates = _templates(request)
    access = Access(request, caller)
    active = chosen_set(access, checked.context_set_id)
    if active is None:
        if caller.context_set_id:
            raise ApiError(404, "NOT_FOUND", "context set not found")
        raise ApiError(400, "VALIDATION_ERROR", "request validation failed", [Violation(
            "$.contextSetId", "is required for a credential not bound to a context set")])
    template = _approved(templates, caller.workspace, checked.template_id,
                         active.query_templates)
    values = check_parameters(template.parameters, parameters)
    if templates.sandbox.problem is not None:
        raise SandboxNotConfiguredError(templates.sandbox.problem)
    readable = access.readable()
    collections = [c for c in active.collections if c in readable]
    return _run(templates, caller, active.id, template, values, collections,
                agent_services(request).clock)


def _run(templates: QueryTemplateServices, caller: AgentCaller, set_id: str,
         template: QueryTemplateState, values: list[Any],
         collections: list[str], clock: Callable[[], datetime]) -> Response[TemplateRows]:
    started = time.monotonic()
    statement = rewrite(TemplateDraft(description=template.description, sql=template.sql,
                                      parameters=template.parameters))
    result = templates.sandbox.run(statement, template.parameters,
                                   bound_values(template.parameters, values), caller.workspace,
                                   collections, template.timeout_ms, template.max_rows)
    if result.outcome == "busy":  # it never ran: nothing is recorded
        raise capacity_exhausted()
    duration = int((time.monotonic() - started) * 1000)
    event = QueryTemplateRun(
        at=clock(), actor=caller.creator.key, run_id=secrets.token_hex(8),
        template_id=template.id, template_version=template.version, context_set_id=set_id,
        credential_id=caller.credential.id, created_by=caller.creator.key,
        parameters_sha256=parameters_sha256(template.parameters, values),
        outcome=result.outcome, sqlstate="" if result.outcome == "ok" else result.sqlstate,
        row_count=len(result.rows), truncated=result.truncated, duration_ms=duration)
    position = templates.commands.record_run(caller.workspace, event)
    recorded = {POSITION_HEADER: str(position)}  # a write whatever its outcome (spec 1.7)
    if result.outcome == "timeout":
        raise ApiError(504, "AGENT_QUERY_TIMEOUT",
                       f"query template exceeded its timeout of {template.timeout_ms} ms",
                       headers=recorded)
    if result.outcome == "failed":
        # the database's primary message may quote a caller's value whole (decision 0059)
        raise ApiError(400, "AGENT_QUERY_FAILED",
                       f"query template failed: {told(result.message)}",
                       {"sqlstate": result.sqlstate}, recorded)
    return api_json({"columns": result.columns, "rows": result.rows,
                     "rowCount": len(result.rows), "truncated": result.truncated}, 200,
                    position)


ROUTES = [run_query_template]

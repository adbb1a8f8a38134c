"""The error bodies the agent routes document, status by status: the ``/api/`` shape
(agent-context-api.md §1.3) with the codes that status carries, for the OpenAPI document.
"""

from __future__ import annotations

from typing import Annotated, Any

from msgspec import UNSET, UnsetType

from context_service.contract.agent import AnyMissing
from context_service.contract.base import Closed, doc, one_of


class Violation(Closed, kw_only=True):
    path: str
    message: str


class AgentInvalidRequest(Closed, kw_only=True):
    code: Annotated[str, one_of("INVALID_REQUEST", "VALIDATION_ERROR")]
    message: str
    # at most 100 violations, then one entry counting the rest (decision 0059)
    details: Annotated[list[Violation], doc(minItems=1, maxItems=101)] | UnsetType = UNSET


class AgentUnauthorized(Closed, kw_only=True):
    code: Annotated[str, one_of("UNAUTHORIZED", "EXPIRED_CREDENTIAL")]
    message: str


class AgentForbidden(Closed, kw_only=True):
    code: Annotated[str, one_of("AGENT_BROWSER_REQUEST_REFUSED", "FORBIDDEN",
                                 "AGENT_CREDENTIAL_AUTHORITY_LOST")]
    message: str


class AgentNotFound(Closed, kw_only=True):
    code: Annotated[str, one_of("NOT_FOUND")]
    message: str


class AgentRateLimited(Closed, kw_only=True):
    code: Annotated[str, one_of("RATE_LIMITED")]
    message: str


class AgentUnavailable(Closed, kw_only=True):
    code: Annotated[str, one_of("SERVICE_UNAVAILABLE")]
    message: str


class IncompletePackDetails(Closed, kw_only=True):
    missing: Annotated[list[AnyMissing], doc(minItems=1)]


class PackIncomplete(Closed, kw_only=True):
    code: Annotated[str, one_of("AGENT_PACK_INCOMPLETE")]
    message: str
    details: IncompletePackDetails | UnsetType = UNSET


class ReplayTaskMismatch(Closed, kw_only=True):
    code: Annotated[str, one_of("AGENT_REPLAY_TASK_MISMATCH")]
    message: str


class ReplayExpired(Closed, kw_only=True):
    code: Annotated[str, one_of("AGENT_REPLAY_EXPIRED")]
    message: str


class QueryFailure(Closed, kw_only=True):
    sqlstate: Annotated[str, doc(pattern="^[0-9A-Z]{5}$")]


class QueryFailed(Closed, kw_only=True):
    code: Annotated[str, one_of("AGENT_QUERY_FAILED")]
    message: str
    details: QueryFailure | UnsetType = UNSET


class QueryInternalError(Closed, kw_only=True):
    code: Annotated[str, one_of("INTERNAL_ERROR")]
    message: str


class QueryTimedOut(Closed, kw_only=True):
    code: Annotated[str, one_of("AGENT_QUERY_TIMEOUT")]
    message: str


# by status, the bodies every agent route shares
SHARED_ERRORS: dict[int, Any] = {400: AgentInvalidRequest, 401: AgentUnauthorized,
                                 403: AgentForbidden, 404: AgentNotFound,
                                 429: AgentRateLimited, 503: AgentUnavailable}

"""Field rules of the pack and replay routes (agent-context-api.md §7.1, §8).

The bodies are the contract's ``PackRequest`` and ``ReplayRequest``, whose bounds are documented
there and checked here, in the spec's order, so every violation is reported with its message.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

import msgspec

from context_service.contract.agent import AsOf, Budget, Filters, PackRequest, ReplayRequest
from context_service.domain.pack.model import SOURCES
from context_service.domain.pack.request import (
    BEST_EFFORT,
    DEFAULT_MAX_LATENCY_MS,
    DEFAULT_MAX_TOKENS,
    HYBRID,
    LEXICAL,
    REQUIRE_COMPLETE,
)
from context_service.domain.pack.request import PackRequest as Pack
from context_service.domain.values import parse_timestamp
from context_service.http.agent.body import Violations, check_range, check_text
from context_service.http.agent.errors import ApiError, Violation

MAX_TASK = 4000
MAX_COLLECTIONS, MAX_DOCUMENTS = 8, 20
TOKENS = (256, 32000)
LATENCY = (1000, 60000)
COVERAGES = (BEST_EFFORT, REQUIRE_COMPLETE)
RETRIEVALS = (HYBRID, LEXICAL)
MODES = ("verify", "recompute")
TIMESTAMP = "must be an RFC 3339 timestamp with a zone"


class CheckedPack(msgspec.Struct, frozen=True, kw_only=True):
    """A pack body that passed the field rules: the request with defaults and the times sent."""

    request: Pack  # context_set_id: the set named in the request ("" for none)
    named_set: str | None
    valid_time: datetime | None
    system_time: datetime | None


def _choice(v: Violations, path: str, value: str | None, allowed: tuple[str, ...],
            message: str) -> None:
    if value is not None and value not in allowed:
        v.add(path, message)


def _time(v: Violations, path: str, value: str | None) -> datetime | None:
    if value is None:
        return None
    parsed = parse_timestamp(value)
    if parsed is None:
        v.add(path, TIMESTAMP)
    return parsed


def _document_id(value: str) -> bool:
    collection, slash, rest = value.partition("/")
    return bool(slash and collection and rest)


def check_pack(body: PackRequest, started: datetime) -> CheckedPack:
    """The field rules of §7.1 in the spec's order; raises ``400 VALIDATION_ERROR``."""
    v = Violations()
    check_text(v, "$.task", body.task, MAX_TASK)
    budget = body.budget or Budget()
    check_range(v, "$.budget.maxTokens", budget.max_tokens, *TOKENS)
    check_range(v, "$.budget.maxLatencyMs", budget.max_latency_ms, *LATENCY)
    _choice(v, "$.budget.coverage", budget.coverage, COVERAGES,
            "must be best_effort or require_complete")
    as_of = body.as_of or AsOf()
    valid_time = _time(v, "$.asOf.validTime", as_of.valid_time)
    system_time = _time(v, "$.asOf.systemTime", as_of.system_time)
    if system_time is not None and system_time > started:
        v.add("$.asOf.systemTime", "must not be later than the request")
    filters = body.filters or Filters()
    _entries(v, "$.filters.collectionIds", filters.collection_ids, MAX_COLLECTIONS,
             lambda c: c != "", "must not be empty")
    _entries(v, "$.filters.documentIds", filters.document_ids, MAX_DOCUMENTS, _document_id,
             "must be <collectionId>/<file> or <collectionId>/#<recordId>")
    if filters.sources is not None:
        if not filters.sources:
            v.add("$.filters.sources", "must not be empty")
        for i, source in enumerate(filters.sources):
            if source not in SOURCES:
                v.add(f"$.filters.sources[{i}]", "must be passages, graph or documents")
    _choice(v, "$.retrieval", body.retrieval, RETRIEVALS, "must be hybrid or lexical")
    if body.context_set_id is not None and body.context_set_id == "":
        v.add("$.contextSetId", "must not be empty")
    v.raise_if_any()
    assert body.task is not None
    sources = tuple(s for s in SOURCES if filters.sources is None or s in filters.sources)
    request = Pack(
        task=body.task, max_tokens=budget.max_tokens or DEFAULT_MAX_TOKENS,
        max_latency_ms=budget.max_latency_ms or DEFAULT_MAX_LATENCY_MS,
        coverage=budget.coverage or BEST_EFFORT,
        collection_ids=tuple(filters.collection_ids or ()),
        document_ids=tuple(filters.document_ids or ()), sources=sources,
        retrieval=body.retrieval or HYBRID, context_set_id=body.context_set_id or "")
    return CheckedPack(request=request, named_set=body.context_set_id, valid_time=valid_time,
                       system_time=system_time)


def _entries(v: Violations, path: str, values: list[str] | None, limit: int,
             good: Callable[[str], bool], message: str) -> None:
    if values is None:
        return
    if len(values) > limit:
        v.add(path, f"must have at most {limit} entries")
    for i, value in enumerate(values):
        if not good(value):
            v.add(f"{path}[{i}]", message)


def check_replay(body: ReplayRequest) -> str:
    """The field rules of §8; returns the mode. (A recompute without a task is refused later,
    after the replay's own checks: §8.2 rule 1.)"""
    v = Violations()
    if body.mode is None:
        v.add("$.mode", "is required")
    elif body.mode not in MODES:
        v.add("$.mode", "must be verify or recompute")
    check_text(v, "$.task", body.task, MAX_TASK, required=False)
    v.raise_if_any()
    assert body.mode is not None
    return body.mode


def valid_time_default(started: datetime) -> datetime:
    """The time the request began, in UTC, truncated to whole seconds (§7.3)."""
    return started.astimezone(UTC).replace(microsecond=0)


def recompute_needs_task() -> ApiError:
    return ApiError(400, "VALIDATION_ERROR", "request validation failed",
                    [Violation("$.task", "is required for mode recompute")])

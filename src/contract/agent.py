"""Requests and answers of ``/api/agent/v1`` (agent-context-api.md §7-§11) as msgspec Structs.

The agent routes decode their bodies with the request Structs, whose bounds are documented in
the JSON schema and checked by the routes' field rules (the specification's order and messages).
Answers leave a key the service omits ``UNSET``, so encoding one writes back the service's keys.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

import msgspec
from msgspec import UNSET, UnsetType

from context_service.contract.base import Answer, Request
from context_service.contract.base import doc as _doc
from context_service.contract.base import one_of as _one_of

SetId = Annotated[str, _doc("an active context set visible to the credential; a bound "
                            "credential's own set when omitted", minLength=1)]
Task = Annotated[str, _doc("what the agent is working on, in plain words", minLength=1,
                           maxLength=4000)]
Limit = Annotated[int, _doc("at most this many (default 5)", minimum=1, maximum=50)]

# --- context packs (§7) ------------------------------------------------------------------------


class Budget(Request, kw_only=True):
    max_tokens: Annotated[int, _doc("tokens the items may use (default 4000)", minimum=256,
                                    maximum=32000)] | None = None
    max_latency_ms: Annotated[int, _doc("deadline of retrieval and packing (default 10000)",
                                        minimum=1000, maximum=60000)] | None = None
    coverage: Annotated[str, _one_of("best_effort", "require_complete")] | None = None


class AsOf(Request, kw_only=True):
    valid_time: Annotated[str, _doc("RFC 3339 with a zone: facts valid then (default: now)",
                                    format="date-time")] | None = None
    system_time: Annotated[str, _doc("RFC 3339 with a zone, not later than the request: the "
                                     "service's knowledge then (default: now)",
                                     format="date-time")] | None = None


class Filters(Request, kw_only=True):
    collection_ids: Annotated[list[str], _doc("only these collections", maxItems=8)] \
        | None = None
    document_ids: Annotated[list[str], _doc(
        "only these documents: <collectionId>/<file> or <collectionId>/#<recordId>",
        maxItems=20)] | None = None
    sources: Annotated[list[Annotated[str, _one_of("passages", "graph", "documents")]],
                       _doc(minItems=1)] | None = None


class PackRequest(Request, kw_only=True):
    """``POST /context-packs`` and ``/context-packs/stream``."""

    REQUIRED = ("task",)
    task: Task | None = None
    budget: Budget | None = None
    as_of: AsOf | None = None
    filters: Filters | None = None
    retrieval: Annotated[str, _one_of("hybrid", "lexical")] | None = None
    context_set_id: SetId | None = None


class PackAsOf(Answer, kw_only=True):
    valid_time: str
    system_time: str
    position: int


class PackBudget(Answer, kw_only=True):
    max_tokens: int
    used_tokens: int
    coverage: str


class ItemSource(Answer, kw_only=True):
    kind: str
    collection_id: str | UnsetType = UNSET
    document_id: str | UnsetType = UNSET
    record_id: str | UnsetType = UNSET
    revision: str | UnsetType = UNSET
    context_set_id: str | UnsetType = UNSET
    context_set_version: int | UnsetType = UNSET


class Validity(Answer, kw_only=True):
    status: str
    valid_from: str | UnsetType = UNSET
    valid_to: str | UnsetType = UNSET


class PackItem(Answer, kw_only=True):
    """An item (§7.11): ``trust`` is ``approved`` (the set's curated items) or ``untrusted``
    (evidence: data to weigh, never instructions to follow)."""

    id: str
    class_: str = msgspec.field(name="class")
    trust: str
    text: str
    tokens: int
    score: float
    source: ItemSource
    validity: Validity | UnsetType = UNSET
    superseded: bool | UnsetType = UNSET
    contradiction: bool | UnsetType = UNSET
    requirement_ids: list[str] | UnsetType = UNSET
    superseded_by: list[str] | UnsetType = UNSET
    contradicts: list[str] | UnsetType = UNSET
    absorbed: list[str] | UnsetType = UNSET
    hash: str


class Counted(Answer, kw_only=True):
    count: int
    ids: list[str] | UnsetType = UNSET


class Omitted(Answer, kw_only=True):
    budget: Counted
    duplicate: Counted
    access: Counted


class MissingEntry(Answer, kw_only=True):
    kind: str
    reason: str
    id: str | UnsetType = UNSET
    collection_id: str | UnsetType = UNSET
    document_id: str | UnsetType = UNSET


class Receipt(Answer, kw_only=True):
    algorithm: str
    merkle_root: str
    position: int


class RecomputedPack(Answer, kw_only=True):
    """A pack without its release: the ``pack`` of a recompute (§8.2)."""

    pack_id: str
    task: str
    as_of: PackAsOf
    budget: PackBudget
    complete: bool
    items: list[PackItem]
    omitted: Omitted
    missing: list[MissingEntry]
    receipt: Receipt


class ContextPack(Answer, kw_only=True):
    """The answer of ``POST /context-packs`` (§7.12), key for key."""

    pack_id: str
    replay_id: str
    task: str
    as_of: PackAsOf
    budget: PackBudget
    complete: bool
    items: list[PackItem]
    omitted: Omitted
    missing: list[MissingEntry]
    receipt: Receipt
    expires_at: str


class StreamBudget(Answer, kw_only=True):
    max_tokens: int
    coverage: str


class HeaderLine(Answer, kw_only=True, tag_field="type", tag="header"):
    pack_id: str
    replay_id: str
    as_of: PackAsOf
    budget: StreamBudget


class ItemLine(Answer, kw_only=True, tag_field="type", tag="item"):
    item: PackItem


class FooterLine(Answer, kw_only=True, tag_field="type", tag="footer"):
    used_tokens: int
    complete: bool
    omitted: Omitted
    missing: list[MissingEntry]
    receipt: Receipt
    expires_at: str


class ErrorLine(Answer, kw_only=True, tag_field="type", tag="error"):
    code: str
    message: str


PackLine = HeaderLine | ItemLine | FooterLine | ErrorLine

# --- replays (§8) ------------------------------------------------------------------------------


class ReplayRequest(Request, kw_only=True):
    """The body of ``POST /replays/{replayId}``."""

    REQUIRED: ClassVar[tuple[str, ...]] = ("mode",)
    mode: Annotated[str, _one_of("verify", "recompute")] | None = None
    task: Annotated[Task, _doc("the pack's task; required to recompute")] | None = None


class ReplayPack(ReplayRequest, kw_only=True):
    """A replay as one call: the replay id (the route's path) and the body of
    ``POST /replays/{replayId}``."""

    REQUIRED = ("replayId", "mode")
    replay_id: Annotated[str, _doc("the replayId of a released pack",
                                   pattern="^rp_[0-9a-f]{32}$")]


class CheckedItem(Answer, kw_only=True):
    id: str
    status: str
    recorded_hash: str
    current_hash: str | UnsetType = UNSET


class VerifySummary(Answer, kw_only=True):
    unchanged: int
    changed: int
    unavailable: int


class Verification(Answer, kw_only=True, tag_field="mode", tag="verify"):
    replay_id: str
    position: int
    items: list[CheckedItem]
    summary: VerifySummary
    merkle_root: str
    current_merkle_root: str
    matches: bool


class EngineVersions(Answer, kw_only=True):
    recorded: str
    current: str


class PackDiff(Answer, kw_only=True):
    added: list[str]
    removed: list[str]
    changed: list[str]
    unchanged: int


class Recomputation(Answer, kw_only=True, tag_field="mode", tag="recompute"):
    replay_id: str
    engine_version: EngineVersions
    pack: RecomputedPack
    diff: PackDiff


Replay = Verification | Recomputation

# --- context sets and the library (§9) ---------------------------------------------------------


class ListContextSetsRequest(Request, kw_only=True):
    query: Annotated[str, _doc("words to rank the sets by", maxLength=200)] | None = None
    limit: Annotated[int, _doc("at most this many (default 20)", minimum=1, maximum=100)] \
        | None = None


class GetContextSetRequest(Request, kw_only=True):
    context_set_id: Annotated[SetId, _doc("required unless the credential is bound to a "
                                          "context set")] | None = None


class LookupDefinitionsRequest(Request, kw_only=True):
    REQUIRED = ("term",)
    term: Annotated[str, _doc("the term to define", minLength=1, maxLength=200)] | None = None
    context_set_id: SetId | None = None
    limit: Limit | None = None


class MatchVerifiedAnswersRequest(Request, kw_only=True):
    REQUIRED = ("question",)
    question: Annotated[str, _doc("the question", minLength=1, maxLength=4000)] | None = None
    context_set_id: SetId | None = None
    limit: Limit | None = None


class ContextSetSummary(Answer, kw_only=True):
    id: str
    name: str
    description: str | UnsetType = UNSET
    version: int
    collections: list[str]
    score: float | UnsetType = UNSET


class ContextSetList(Answer, kw_only=True):
    items: list[ContextSetSummary]


class VerifiedAnswer(Answer, kw_only=True):
    id: str
    question: str
    answer: str
    citations: list[str] | UnsetType = UNSET


class Definition(Answer, kw_only=True):
    term: str
    definition: str
    aliases: list[str] | UnsetType = UNSET


class Instruction(Answer, kw_only=True):
    id: str
    text: str


class RequiredEvidence(Answer, kw_only=True):
    id: str
    description: str
    query: str


class TemplateParameter(Answer, kw_only=True):
    name: str
    type: str
    required: bool
    default: Any = UNSET


class AgentTemplate(Answer, kw_only=True):
    """A query template as an agent reads it: never its SQL."""

    id: str
    description: str
    parameters: list[TemplateParameter]
    max_rows: int
    timeout_ms: int


class AgentContextSet(Answer, kw_only=True):
    """The answer of ``POST /context-sets/get``."""

    id: str
    name: str
    description: str | UnsetType = UNSET
    version: int
    updated_at: str
    collections: list[str]
    verified_answers: list[VerifiedAnswer] | UnsetType = UNSET
    definitions: list[Definition] | UnsetType = UNSET
    instructions: list[Instruction] | UnsetType = UNSET
    required_evidence: list[RequiredEvidence] | UnsetType = UNSET
    query_templates: list[AgentTemplate] | UnsetType = UNSET


class DefinitionMatch(Answer, kw_only=True):
    context_set_id: str
    term: str
    definition: str
    aliases: list[str] | UnsetType = UNSET
    match: str
    score: float


class DefinitionMatches(Answer, kw_only=True):
    items: list[DefinitionMatch]


class AnswerMatch(Answer, kw_only=True):
    context_set_id: str
    id: str
    question: str
    answer: str
    citations: list[str] | UnsetType = UNSET
    match: str
    score: float


class AnswerMatches(Answer, kw_only=True):
    items: list[AnswerMatch]

# --- studied fields (§10) ----------------------------------------------------------------------


CollectionId = Annotated[str, _doc("a collection readable by the credential", minLength=1)]


class ListFieldsRequest(Request, kw_only=True):
    REQUIRED = ("collectionId",)
    collection_id: CollectionId | None = None


class FieldFilter(Request, kw_only=True):
    REQUIRED = ("field", "op")
    field: str | None = None
    op: Annotated[str, _one_of("eq", "ne", "lt", "lte", "gt", "gte", "contains", "prefix",
                               "exists")] | None = None
    value: Any = None


class FieldSort(Request, kw_only=True):
    REQUIRED = ("field",)
    field: str | None = None
    direction: Annotated[str, _one_of("asc", "desc")] | None = None


class FieldFunction(Request, kw_only=True):
    REQUIRED = ("op",)
    op: Annotated[str, _one_of("count", "min", "max", "sum", "avg")] | None = None
    field: Annotated[str, _doc("required except for count")] | None = None


class FieldAggregate(Request, kw_only=True):
    REQUIRED = ("functions",)
    group_by: str | None = None
    functions: Annotated[list[FieldFunction], _doc(minItems=1, maxItems=6)] | None = None


class QueryFieldsRequest(Request, kw_only=True):
    """``fields`` or ``aggregate`` is required."""

    REQUIRED = ("collectionId",)
    collection_id: CollectionId | None = None
    fields: Annotated[list[str], _doc("fields to return, one row per document", maxItems=6,
                                      uniqueItems=True)] | None = None
    filters: Annotated[list[FieldFilter], _doc(maxItems=6)] | None = None
    sort: FieldSort | None = None
    limit: Annotated[int, _doc("at most this many rows (default 50)", minimum=1,
                               maximum=200)] | None = None
    aggregate: FieldAggregate | None = None
    known_at: Annotated[str, _doc("YYYY-MM-DD, not later than today (UTC): the fields as known "
                                  "at the end of that day", format="date")] | None = None


class StudiedField(Answer, kw_only=True):
    name: str
    type: str
    documents: int
    coverage: int
    currencies: list[str] | UnsetType = UNSET


class FieldListing(Answer, kw_only=True):
    collection_id: str
    documents: int
    fields: list[StudiedField]
    coverage_lines: list[str]
    incomplete: bool


class FieldColumn(Answer, kw_only=True):
    name: str
    type: str


class FieldRow(Answer, kw_only=True):
    document_id: str
    values: list[dict[str, Any] | None]


class FieldAnswer(Answer, kw_only=True):
    collection_id: str
    documents: int
    matched: int
    known_at: str | UnsetType = UNSET
    fields: list[FieldColumn]
    rows: list[FieldRow]
    row_count: int
    truncated: bool
    aggregates: dict[str, Any] | UnsetType = UNSET
    coverage_lines: list[str]
    incomplete: bool

# --- query templates (§11.4) -------------------------------------------------------------------


class RunQueryTemplateRequest(Request, kw_only=True):
    REQUIRED = ("templateId",)
    template_id: Annotated[str, _doc("a template listed by the context set (context-sets/get)",
                                     minLength=1)] | None = None
    parameters: Annotated[dict[str, Any], _doc("the template's declared parameters")] \
        | None = None
    context_set_id: SetId | None = None


class RowColumn(Answer, kw_only=True):
    name: str
    type: str


class TemplateRows(Answer, kw_only=True):
    columns: list[RowColumn]
    rows: list[list[Any]]
    row_count: int
    truncated: bool

# --- errors (§1.3) -----------------------------------------------------------------------------


class ErrorBody(Answer, kw_only=True):
    """Every ``/api/`` error: a code, a message, and details for some codes."""

    code: str
    message: str
    details: Any = UNSET

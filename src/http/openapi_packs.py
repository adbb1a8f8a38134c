"""The pack and replay operations of the document (agent-context-api.md §7, §8): their bodies
with the field rules of §7.1 and §8, the pack (§7.11, §7.12), its ndjson stream (§7.14), the
verify and recompute answers (§8.1, §8.2) and their error bodies. Kept apart from the other
operations' entries; ``openapi`` merges them in.
"""

from __future__ import annotations

from context_service.domain.pack.items import (
    APPROVED,
    DEFINITIONS,
    EVIDENCE,
    INSTRUCTIONS,
    REQUIRED_EVIDENCE,
    UNTRUSTED,
    VERIFIED_ANSWERS,
    WHOLE_DOCUMENT,
)
from context_service.domain.pack.model import ENGINE_VERSION, SOURCES
from context_service.domain.pack.replay import CHANGED, UNAVAILABLE, UNCHANGED
from context_service.http.agent.packs_shapes import (
    COVERAGES,
    LATENCY,
    MAX_COLLECTIONS,
    MAX_DOCUMENTS,
    MAX_TASK,
    RETRIEVALS,
    TOKENS,
)
from context_service.http.openapi_shapes import SPACE, TIMESTAMP, Schema, obj, ref

NDJSON = "application/x-ndjson"
_STR: Schema = {"type": "string"}
_STAMP: Schema = {"type": "string", "format": "date-time"}
_COUNT: Schema = {"type": "integer", "minimum": 0}
_HASH: Schema = {"type": "string", "pattern": "^sha256:[0-9a-f]{64}$"}
_IDS: Schema = {"type": "array", "items": _STR}
_SOME: Schema = {**_IDS, "minItems": 1}  # omitted when empty
_COVERAGE: Schema = {"type": "string", "enum": list(COVERAGES)}

# --- request bodies (§7.1, §8) -----------------------------------------------------------------

_TASK: Schema = {"type": "string", "minLength": 1, "maxLength": MAX_TASK,
                 "pattern": f"[^{SPACE}]",
                 "description": "not blank"}
# not later than the request: documented as a time before the document was written
_PAST: Schema = {**TIMESTAMP, "pattern": TIMESTAMP["pattern"].replace(
    "(?:19|20)[0-9]{2}", "(?:19[0-9]{2}|20[01][0-9]|202[0-5])"),
    "description": "not later than the request"}
_FILTERS = obj({}, {
    "collectionIds": {"type": "array", "maxItems": MAX_COLLECTIONS,
                      "items": {"type": "string", "minLength": 1},
                      "description": "each readable now, else 404"},
    "documentIds": {"type": "array", "maxItems": MAX_DOCUMENTS, "items": {
        "type": "string", "pattern": "^[^/]+/[\\s\\S]",
        "description": "<collectionId>/<file> or <collectionId>/#<recordId>"}},
    "sources": {"type": "array", "minItems": 1,
                "items": {"type": "string", "enum": list(SOURCES)}}})
_PACK_BODY = obj({"task": _TASK}, {
    "budget": obj({}, {
        "maxTokens": {"type": "integer", "minimum": TOKENS[0], "maximum": TOKENS[1]},
        "maxLatencyMs": {"type": "integer", "minimum": LATENCY[0], "maximum": LATENCY[1]},
        "coverage": {**_COVERAGE, "description": "require_complete: 422 when incomplete"}}),
    "asOf": obj({}, {"validTime": TIMESTAMP, "systemTime": _PAST}),
    "filters": _FILTERS,
    "retrieval": {"type": "string", "enum": list(RETRIEVALS)},
    "contextSetId": {"type": "string", "minLength": 1,
                     "description": "an active context set of the workspace, else 404"}})
# recompute needs the task whose hash the replay recorded (else 409)
_REPLAY_BODY: Schema = {"oneOf": [obj({"mode": {"const": "verify"}}, {"task": _TASK}),
                                  obj({"mode": {"const": "recompute"}, "task": _TASK})]}

BODIES: dict[str, Schema] = {
    "agent_context_pack": _PACK_BODY,
    "agent_context_pack_stream": _PACK_BODY,
    "agent_replay": _REPLAY_BODY,
}
PATH_PARAMS: dict[str, Schema] = {"replayId": {"type": "string", "pattern": "^rp_[0-9a-f]{32}$"}}

# --- the pack (§7.10-§7.12) --------------------------------------------------------------------

_SOURCE = obj({"kind": {"type": "string",
                        "enum": ["passage", "document", "graph", "context_set"]}},
              {"collectionId": _STR, "documentId": _STR, "recordId": _STR, "revision": _STR,
               "contextSetId": _STR, "contextSetVersion": {"type": "integer", "minimum": 1}})
_ITEM: dict[str, Schema] = {
    "id": _STR, "class": _STR, "trust": _STR, "text": _STR,
    "tokens": {"type": "integer", "minimum": 1}, "score": {"type": "number"},
    "source": _SOURCE}
_VALIDITY = obj({"status": {"type": "string",
                            "enum": ["valid", "unknown", "not_yet_valid", "expired"]}},
                {"validFrom": _STAMP, "validTo": _STAMP})
_SET_CLASSES = [VERIFIED_ANSWERS, DEFINITIONS, INSTRUCTIONS]
_APPROVED = obj({**_ITEM, "class": {"type": "string", "enum": _SET_CLASSES},
                 "trust": {"const": APPROVED}, "hash": _HASH})
_UNTRUSTED = obj(
    {**_ITEM, "class": {"type": "string", "enum": [REQUIRED_EVIDENCE, EVIDENCE, WHOLE_DOCUMENT]},
     "trust": {"const": UNTRUSTED}, "validity": _VALIDITY, "superseded": {"type": "boolean"},
     "contradiction": {"type": "boolean"}, "hash": _HASH},
    {"requirementIds": _SOME, "supersededBy": _SOME, "contradicts": _SOME, "absorbed": _SOME})


def _missing(kind: str, reasons: list[str], identity: str | None = None) -> Schema:
    fields: dict[str, Schema] = {"kind": {"const": kind}}
    if identity is not None:
        fields[identity] = _STR
    return obj({**fields, "reason": {"type": "string", "enum": reasons}})


_MISSING: Schema = {"type": "array", "items": {"oneOf": [
    _missing("collection", ["index_unavailable"], "collectionId"),
    _missing("document", ["unavailable"], "documentId"),
    _missing("required_evidence", ["not_found", "budget", "sources", "deadline"], "id"),
    _missing("context_set", ["not_in_force"], "id"),
    _missing("deadline", ["retrieval_cut_short"])]}}
_AS_OF = obj({"validTime": _STAMP, "systemTime": _STAMP, "position": _COUNT})
_OMITTED = obj({"budget": obj({"count": _COUNT, "ids": _IDS}),
                "duplicate": obj({"count": _COUNT, "ids": _IDS}),
                "access": obj({"count": _COUNT})})
_RECEIPT = obj({"algorithm": {"const": "sha256"}, "merkleRoot": _HASH, "position": _COUNT})
_PACK_ID: Schema = {"type": "string", "pattern": "^pk_[0-9a-f]{32}$"}
_REPLAY_ID = PATH_PARAMS["replayId"]
_PACK: dict[str, Schema] = {
    "packId": _PACK_ID, "task": _STR, "asOf": _AS_OF,
    "budget": obj({"maxTokens": {"type": "integer"}, "usedTokens": _COUNT,
                   "coverage": _COVERAGE}),
    "complete": {"type": "boolean"},
    "items": {"type": "array", "items": ref("PackItem")},
    "omitted": _OMITTED, "missing": _MISSING, "receipt": _RECEIPT}

# --- the stream (§7.14): its lines in order, as a JSON array ------------------------------------

_LINES: Schema = {
    "type": "array", "minItems": 2,
    "description": "one compact JSON object per line, each ending in LF, read here as the"
                   " array of the lines: the header, one item line per item, the footer (or,"
                   " when writing fails after the header, a last error line)",
    "prefixItems": [obj({"type": {"const": "header"}, "packId": _PACK_ID,
                         "replayId": _REPLAY_ID, "asOf": _AS_OF,
                         "budget": obj({"maxTokens": {"type": "integer"},
                                        "coverage": _COVERAGE})})],
    "items": {"oneOf": [
        obj({"type": {"const": "item"}, "item": ref("PackItem")}),
        obj({"type": {"const": "footer"}, "usedTokens": _COUNT,
             "complete": {"type": "boolean"}, "omitted": _OMITTED, "missing": _MISSING,
             "receipt": _RECEIPT, "expiresAt": _STAMP}),
        obj({"type": {"const": "error"}, "code": {"const": "INTERNAL_ERROR"},
             "message": _STR})]},
    "contains": {"type": "object", "properties": {"type": {"enum": ["footer", "error"]}},
                 "required": ["type"]},
    "maxContains": 1}

# --- replays (§8.1, §8.2) ----------------------------------------------------------------------

_CHECKED: Schema = {"oneOf": [
    obj({"id": _STR, "status": {"type": "string", "enum": [UNCHANGED, CHANGED]},
         "recordedHash": _HASH, "currentHash": _HASH}),
    obj({"id": _STR, "status": {"const": UNAVAILABLE}, "recordedHash": _HASH})]}
_VERIFIED = obj({
    "replayId": _REPLAY_ID, "mode": {"const": "verify"}, "position": _COUNT,
    "items": {"type": "array", "items": _CHECKED},
    "summary": obj({UNCHANGED: _COUNT, CHANGED: _COUNT, UNAVAILABLE: _COUNT}),
    "merkleRoot": _HASH, "currentMerkleRoot": _HASH, "matches": {"type": "boolean"}})
_RECOMPUTED = obj({
    "replayId": _REPLAY_ID, "mode": {"const": "recompute"},
    "engineVersion": obj({"recorded": _STR, "current": {"const": ENGINE_VERSION}}),
    "pack": ref("RecomputedPack"),
    "diff": obj({"added": _IDS, "removed": _IDS, "changed": _IDS, "unchanged": _COUNT})})

RESPONSES: dict[str, Schema] = {
    "PackItem": {"oneOf": [_APPROVED, _UNTRUSTED]},
    "ContextPack": obj({"packId": _PACK_ID, "replayId": _REPLAY_ID, **_PACK,
                        "expiresAt": _STAMP}),
    # a recompute's pack: the same without replayId and expiresAt
    "RecomputedPack": obj(_PACK),
    "ContextPackLines": _LINES,
    "Replay": {"oneOf": [_VERIFIED, _RECOMPUTED]},
}
SUCCESS: dict[str, Schema | None] = {
    "agent_context_pack": ref("ContextPack"),
    "agent_context_pack_stream": ref("ContextPackLines"),
    "agent_replay": ref("Replay"),
}
MEDIA: dict[str, str] = {"agent_context_pack_stream": NDJSON}

# --- error bodies: the /api/ shape with the codes each status carries (§1.3) -------------------


def _error(*codes: str, details: Schema | None = None) -> Schema:
    return obj({"code": {"type": "string", "enum": list(codes)}, "message": _STR},
               None if details is None else {"details": details})


_VIOLATIONS: Schema = {"type": "array", "minItems": 1,
                       "items": obj({"path": _STR, "message": _STR})}
_SHARED: dict[str, Schema] = {
    "400": _error("INVALID_REQUEST", "VALIDATION_ERROR", details=_VIOLATIONS),
    "401": _error("UNAUTHORIZED", "EXPIRED_CREDENTIAL"),
    "403": _error("AGENT_BROWSER_REQUEST_REFUSED", "FORBIDDEN",
                  "AGENT_CREDENTIAL_AUTHORITY_LOST"),
    "404": _error("NOT_FOUND"),
    "429": _error("RATE_LIMITED"),
    "503": _error("SERVICE_UNAVAILABLE"),
}
_PACK_ERRORS = {**_SHARED, "422": _error("AGENT_PACK_INCOMPLETE", details=obj(
    {"missing": {**_MISSING, "minItems": 1}}))}
ERRORS: dict[str, dict[str, Schema]] = {
    "agent_context_pack": _PACK_ERRORS,
    "agent_context_pack_stream": _PACK_ERRORS,
    "agent_replay": {**_SHARED, "409": _error("AGENT_REPLAY_TASK_MISMATCH"),
                     "410": _error("AGENT_REPLAY_EXPIRED")},
}
# response headers by status
RETRY_AFTER = {"Retry-After": {"description": "seconds to wait", "required": True,
                               "schema": {"type": "string", "pattern": "^[0-9]+$"}}}

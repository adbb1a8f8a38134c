"""The studied-field and query-template operations of the document (agent-context-api.md §10.3,
§10.4, §11.1, §11.2, §11.4): their bodies with the field rules, their answers and error bodies.
Rules across fields or the state (a field the collection lacks, a template's declared
parameters, a statement the database refuses) are left to the answer; ``openapi`` merges these.
"""

from __future__ import annotations

from context_service.domain.fields.plan import (
    DEFAULT_LIMIT,
    FUNCTIONS,
    MAX_FIELDS,
    MAX_FILTERS,
    MAX_FUNCTIONS,
    MAX_LIMIT,
    OPERATORS,
)
from context_service.domain.query_template.events import PARAMETER_TYPES
from context_service.domain.query_template.validation import (
    MAX_DESCRIPTION,
    MAX_PARAMETERS,
    MAX_SQL,
)
from context_service.http.openapi_packs import ERRORS as PACK_ERRORS
from context_service.http.openapi_shapes import (
    FREE,
    INT64,
    LABEL,
    TEXT,
    Schema,
    items,
    obj,
    ref,
)

_STR: Schema = {"type": "string"}
_ANY: Schema = {}
_COUNT: Schema = {"type": "integer", "minimum": 0}
_STAMP: Schema = {"type": "string", "format": "date-time"}
_NOT_EMPTY: Schema = {"type": "string", "minLength": 1}
# a real date, documented as one before the document was written (not later than today)
_PAST_DATE: Schema = {"type": "string", "pattern": "^(?:19[0-9]{2}|20[01][0-9]|202[0-5])-"
                      "(?:0[1-9]|1[0-2])-(?:0[1-9]|1[0-9]|2[0-8])$",
                      "description": "YYYY-MM-DD, not later than today (UTC)"}

# --- studied fields (§10.3, §10.4) -------------------------------------------------------------

_COLLECTION: Schema = {**_NOT_EMPTY, "description": "readable by the credential now, else 404"}
_FIELD: Schema = {"type": "string", "description": "a field of the collection, else 400"}
_FUNCTION: Schema = {"oneOf": [
    obj({"op": {"const": "count"}}, {"field": _FIELD}),
    obj({"op": {"type": "string", "enum": [f for f in FUNCTIONS if f != "count"]},
         "field": _FIELD})]}
_QUERY_BODY: Schema = {
    **obj({"collectionId": _COLLECTION}, {
        "fields": {"type": "array", "maxItems": MAX_FIELDS, "uniqueItems": True,
                   "items": _FIELD},
        "filters": {"type": "array", "maxItems": MAX_FILTERS, "items": obj(
            {"field": _FIELD, "op": {"type": "string", "enum": list(OPERATORS)}},
            {"value": {**_ANY, "description": "of the field type's JSON form, else 400"}})},
        "sort": obj({"field": _FIELD},
                    {"direction": {"type": "string", "enum": ["asc", "desc"]}}),
        "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT,
                  "default": DEFAULT_LIMIT},
        "aggregate": obj({"functions": {"type": "array", "minItems": 1,
                                        "maxItems": MAX_FUNCTIONS, "items": _FUNCTION}},
                         {"groupBy": _FIELD}),
        "knownAt": _PAST_DATE}),
    # a non-empty fields, or an aggregate
    "anyOf": [{"required": ["fields"], "properties": {"fields": {"minItems": 1}}},
              {"required": ["aggregate"]}]}

_CITATION = obj({"recordId": _STR, "documentId": _STR, "start": _COUNT, "end": _COUNT,
                 "quote": _STR})
_UNCITED: Schema = {"type": "string", "enum": ["no_span", "record_unavailable", "span_changed"]}
_CITED: dict[str, Schema] = {"citation": {"oneOf": [_CITATION, {"type": "null"}]}}
_LINES: Schema = {"type": "array", "items": _STR}
_LISTING = obj({
    "collectionId": _STR, "documents": _COUNT,
    "fields": {"type": "array", "items": obj(
        {"name": _STR, "type": _STR, "documents": _COUNT,
         "coverage": {"type": "integer", "minimum": 0, "maximum": 100}},
        {"currencies": {"type": "array", "items": _STR}})},
    "coverageLines": _LINES, "incomplete": {"type": "boolean"}})
_CELL = obj({"value": _ANY, "recordId": _STR, **_CITED}, {"uncitedReason": _UNCITED})
_RESULT: Schema = {"type": "object", "required": ["op"], "properties": {
    "op": {"type": "string", "enum": list(FUNCTIONS)}, "field": _STR, "value": _ANY,
    "values": {"type": "array", "items": {"type": "object"}}, "documentId": _STR,
    "recordId": _STR, **_CITED, "uncitedReason": _UNCITED}, "additionalProperties": False}
_AGGREGATES = obj(
    {"groups": {"type": "array", "items": obj(
        {"count": _COUNT, "results": {"type": "array", "items": _RESULT}}, {"key": _ANY})},
     "groupCount": _COUNT, "groupsTruncated": {"type": "boolean"}},
    {"groupBy": _STR})
_ANSWER = obj(
    {"collectionId": _STR, "documents": _COUNT, "matched": _COUNT,
     "fields": {"type": "array", "items": obj({"name": _STR, "type": _STR})},
     "rows": {"type": "array", "items": obj({
         "documentId": _STR,
         "values": {"type": "array", "items": {"oneOf": [_CELL, {"type": "null"}]}}})},
     "rowCount": _COUNT, "truncated": {"type": "boolean"},
     "coverageLines": _LINES, "incomplete": {"type": "boolean"}},
    {"knownAt": _STR, "aggregates": _AGGREGATES})

# --- query templates (§11.1, §11.2, §11.4) -----------------------------------------------------

_FORMS: dict[str, Schema] = {
    "text": FREE, "integer": INT64, "number": {"type": "number"},
    "boolean": {"type": "boolean"},
    "date": {"type": "string", "pattern": "^[0-9]{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|1[0-9]|2[0-8])$"},
    "timestamp": {"type": "string", "pattern":
                  "^[0-9]{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|1[0-9]|2[0-8])T(?:[01][0-9]|2[0-3])"
                  ":[0-5][0-9]:[0-5][0-9](?:\\.[0-9]{1,6})?(?:Z|[+-](?:0[0-9]|1[0-3]):00)$"}}
_PARAMETER_NAME: Schema = {"type": "string", "pattern": "^[a-z_][a-z0-9_]{0,62}$",
                           "description": "distinct within the template"}
# a parameter of each type: required, or optional with or without a default of its form
_PARAMETER: Schema = {"anyOf": [alternative for kind in PARAMETER_TYPES for alternative in (
    obj({"name": _PARAMETER_NAME, "type": {"const": kind}}, {"required": {"type": "boolean"}}),
    obj({"name": _PARAMETER_NAME, "type": {"const": kind}, "default": _FORMS[kind]},
        {"required": {"const": False}}))]}
_TEMPLATE_FIELDS: dict[str, Schema] = {
    "description": {"type": "string", "maxLength": MAX_DESCRIPTION, "pattern": TEXT["pattern"]},
    "sql": {"type": "string", "maxLength": MAX_SQL, "pattern": TEXT["pattern"],
            "description": "one SELECT or WITH statement over the agent views, its :name"
                           " placeholders exactly the parameters (else 400)"}}
_TEMPLATE_OPTIONAL: dict[str, Schema] = {
    "parameters": {"type": "array", "maxItems": MAX_PARAMETERS, "items": _PARAMETER},
    "maxRows": {"type": "integer", "minimum": 1, "maximum": 1000, "default": 100},
    "timeoutMs": {"type": "integer", "minimum": 100, "maximum": 10000, "default": 5000}}
_RUN_BODY = obj({"templateId": {**_NOT_EMPTY, "description": "approved by the active set"}}, {
    "parameters": {"type": "object", "description": "the template's declared parameters"},
    "contextSetId": _NOT_EMPTY})

_PARAMETER_OUT = obj({"name": _STR, "type": {"type": "string", "enum": list(PARAMETER_TYPES)},
                      "required": {"type": "boolean"}}, {"default": _ANY})
_TEMPLATE = obj({
    "id": _STR, "description": _STR, "sql": _STR,
    "parameters": {"type": "array", "items": _PARAMETER_OUT},
    "maxRows": {"type": "integer"}, "timeoutMs": {"type": "integer"},
    "status": {"type": "string", "enum": ["active", "retired"]},
    "version": {"type": "integer", "minimum": 1}, "createdAt": _STAMP, "updatedAt": _STAMP})
_ROWS = obj({"columns": {"type": "array", "items": obj({"name": _STR, "type": _STR})},
             "rows": {"type": "array", "items": {"type": "array"}},
             "rowCount": _COUNT, "truncated": {"type": "boolean"}})

BODIES: dict[str, Schema] = {
    "agent_list_fields": obj({"collectionId": _COLLECTION}),
    "agent_query_fields": _QUERY_BODY,
    "agent_run_query_template": _RUN_BODY,
    "register_query_template": obj({"id": LABEL, **_TEMPLATE_FIELDS}, _TEMPLATE_OPTIONAL),
    # the id, when given, must equal the path's (else 400)
    "replace_query_template": obj(_TEMPLATE_FIELDS, {"id": LABEL, **_TEMPLATE_OPTIONAL}),
}
PATH_PARAMS: dict[str, Schema] = {}
RESPONSES: dict[str, Schema] = {"FieldListing": _LISTING, "FieldAnswer": _ANSWER,
                                "QueryTemplate": _TEMPLATE, "QueryTemplateRows": _ROWS}
SUCCESS: dict[str, Schema | None] = {
    "agent_list_fields": ref("FieldListing"),
    "agent_query_fields": ref("FieldAnswer"),
    "agent_run_query_template": ref("QueryTemplateRows"),
    "register_query_template": ref("QueryTemplate"),
    "list_query_templates": items(ref("QueryTemplate")),
    "get_query_template": ref("QueryTemplate"),
    "replace_query_template": ref("QueryTemplate"),
    "retire_query_template": None,
}
REQUIRES: dict[str, str] = {name: "query_template:manage" for name in (
    "register_query_template", "list_query_templates", "get_query_template",
    "replace_query_template", "retire_query_template")}

# --- error bodies: the /api/ shape with the codes each status carries (§1.3) -------------------

_SHARED = PACK_ERRORS["agent_replay"]


def _error(*codes: str, details: Schema | None = None) -> Schema:
    return obj({"code": {"type": "string", "enum": list(codes)}, "message": _STR},
               None if details is None else {"details": details})


_FIELD_ERRORS = {code: _SHARED[code] for code in ("400", "401", "403", "404", "429", "503")}
ERRORS: dict[str, dict[str, Schema]] = {
    "agent_list_fields": _FIELD_ERRORS,
    "agent_query_fields": _FIELD_ERRORS,
    "agent_run_query_template": {
        **{code: _SHARED[code] for code in ("401", "403", "404", "429")},
        "400": {"oneOf": [_SHARED["400"], _error("AGENT_QUERY_FAILED", details=obj(
            {"sqlstate": {"type": "string", "pattern": "^[0-9A-Z]{5}$"}}))]},
        "500": _error("INTERNAL_ERROR"),
        "504": _error("AGENT_QUERY_TIMEOUT")},
}

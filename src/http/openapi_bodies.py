"""Documented request bodies and query parameters, per operation, with the rules of spec 2.

A body the document describes as valid passes every request-level check of its route; what only
the state can decide (a name already taken, a revision that is not the current one, a snapshot
not ready yet) is left to the answer. ``null`` means absent (spec 1.1.3), so optional fields are
documented without it and required ones can never be null.
"""

from __future__ import annotations

from context_service.http.openapi_shapes import (
    DIGEST,
    DURATION,
    FREE,
    INT64,
    LABEL,
    NAME,
    PERMISSION,
    POSITION,
    SIZE,
    STRINGS,
    SUBDOMAIN,
    SUBJECT,
    SUBJECT_VALUE,
    TEXT,
    TIMESTAMP,
    Schema,
    obj,
)

_ANY: Schema = {"type": "string"}
_SOURCE = obj({"context": TEXT, "type": TEXT, "revision": DIGEST})
_ACCESS = {"type": "string", "enum": ["ReadWriteOnce", "ReadWriteMany"]}
# A grant needs ``read`` with write, attach or derive; ``administer`` alone is accepted.
_PERMISSIONS: Schema = {"anyOf": [
    {"type": "array", "minItems": 1, "uniqueItems": True, "items": PERMISSION,
     "contains": {"const": "read"}},
    {"type": "array", "const": ["administer"]}]}
_CONSUMER = {"subject": SUBJECT, "since": TIMESTAMP, "desired": {"type": "boolean"},
             "active": {"type": "boolean"}}
_WORKSPACE_MANAGED = obj({"size": SIZE, "accessMode": _ACCESS},
                         {"storageClass": FREE})
_WORKSPACE_CLAIM = obj({"claimName": SUBDOMAIN, "readOnly": {"type": "boolean"}})
_POOL = {"name": NAME, "replicas": {"type": "integer", "minimum": 1, "maximum": 100}}

_SPAN = obj({"start": {"type": "integer", "minimum": 0},
             "end": {"type": "integer", "minimum": 1}})
_FIELD_NAME = {"type": "string", "pattern": "^[a-z][a-z0-9_]{0,62}$"}
_FIELD = {"oneOf": [
    obj({"name": _FIELD_NAME, "type": {"const": "number"}, "value": {"type": "number"}},
        {"span": _SPAN}),
    obj({"name": _FIELD_NAME, "type": {"const": "money"}, "value": obj({
        "amount": {"type": "string", "pattern": "^-?[0-9]{1,20}(\\.[0-9]{1,18})?$"},
        "currency": {"type": "string", "pattern": "^[A-Z]{3}$"}})}, {"span": _SPAN}),
    obj({"name": _FIELD_NAME, "type": {"const": "date"},
         "value": {"type": "string", "format": "date",
                   "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}$"}}, {"span": _SPAN}),
    obj({"name": _FIELD_NAME, "type": {"const": "boolean"}, "value": {"type": "boolean"}},
        {"span": _SPAN}),
    obj({"name": _FIELD_NAME, "type": {"const": "text"},
         "value": {"type": "string", "maxLength": 1000}}, {"span": _SPAN})]}
_INDEX_RECORD = obj(
    {"id": {"type": "string", "minLength": 1}, "context": NAME,
     "type": {"type": "string", "enum": ["memory", "knowledge"]}, "revision": DIGEST,
     "text": {"type": "string", "pattern": "\\S"}},
    {"title": _ANY, "keywords": {"type": "array", "items": _ANY},
     "source": obj({}, {"context": _ANY, "type": _ANY, "revision": _ANY}),
     "file": _ANY,
     "validFrom": TIMESTAMP, "validTo": TIMESTAMP,
     "supersedes": {"type": "array", "uniqueItems": True,
                    "items": {"type": "string", "minLength": 1},
                    "description": "ids of other records of the context"},
     "factKey": {"type": "string", "minLength": 1, "maxLength": 200, "pattern": "\\S"},
     "fields": {"type": "array", "maxItems": 50, "items": _FIELD,
                "description": "distinct names; one type per name across the index"}})
_UPLOAD: dict[str, Schema] = {
    "uploadId": {"type": "string", "pattern": "^[A-Za-z0-9._-]{1,64}$"},
    "part": {"type": "integer", "minimum": 1, "maximum": 10000},
    "parts": {"type": "integer", "minimum": 1, "maximum": 10000}}

BODIES: dict[str, Schema] = {
    "create_context": obj({
        "name": NAME, "namespace": LABEL,
        "type": {"type": "string",
                 "enum": ["workspace", "state", "memory", "knowledge", "artifacts"]},
        "storage": obj({"backend": {"type": "string", "enum": ["pvc"]}, "size": SIZE,
                        "accessMode": _ACCESS}, {"storageClass": FREE})}),
    "publish_revision": obj(
        {"id": DIGEST, "createdAt": TIMESTAMP, "operation": TEXT},
        {"producer": FREE, "parameters": STRINGS,
         "sources": {"type": "array", "items": _SOURCE}, "files": INT64, "bytes": INT64}),
    # the query index stores any string (U+0000 included)
    "publish_query_index": {
        **obj({"revision": DIGEST, "records": {"type": "array", "items": _INDEX_RECORD}},
              _UPLOAD),
        "dependentRequired": {key: [k for k in _UPLOAD if k != key] for key in _UPLOAD},
        "description": "The whole index in one body, or one part of a multi-part upload"
                       " (uploadId, part and parts together; part at most parts; the index"
                       " becomes current when the last missing part arrives; a part's records"
                       " must encode to at most 960 KiB). See docs/query-index-uploads.md."},
    "query": {"allOf": [
        obj({}, {"contexts": {"type": "array", "items": _ANY},
                 "types": {"type": "array", "items": _ANY},
                 "sourceContexts": {"type": "array", "items": _ANY},
                 "revisions": {"type": "array", "items": _ANY},
                 "ids": {"type": "array", "items": _ANY},
                 "query": _ANY,
                 "limit": {"type": "integer", "minimum": 0, "maximum": 100},
                 "cursor": {"type": "string", "description": "a nextCursor of this request"}}),
        {"anyOf": [{"required": ["query"], "properties": {"query": TEXT}},
                   {"required": ["ids"], "properties": {"ids": {"minItems": 1}}}]}]},
    "set_grant": obj({"subject": SUBJECT, "permissions": _PERMISSIONS},
                     {"createdAt": TIMESTAMP}),
    "revoke_grant": SUBJECT,
    "attach_consumer": obj(
        {"kind": TEXT, "name": TEXT,
         "accessMode": {"type": "string", "enum": ["readOnly", "readWrite"]}}, _CONSUMER),
    "detach_consumer": obj({"kind": TEXT, "name": TEXT},
                           {**_CONSUMER, "accessMode": FREE}),
    "create_snapshot": obj({"name": LABEL}, {"snapshotClass": FREE,
                                              "protected": {"type": "boolean"},
                                              "labels": STRINGS}),
    "create_clone": obj({"name": NAME, "snapshot": LABEL}),
    "restore": obj({"snapshot": LABEL}),
    "set_retention": obj({}, {"keepLast": {"type": "integer", "minimum": 0,
                                           "maximum": 2**31 - 1},
                              "maxAge": DURATION}),
    "create_pool": {"oneOf": [
        obj(_POOL, {"sandboxProfile": SUBDOMAIN, "workspace": _WORKSPACE_MANAGED}),
        obj({**_POOL, "workspace": _WORKSPACE_CLAIM}, {"sandboxProfile": SUBDOMAIN}),
        obj({**_POOL, "warmPoolRef": SUBDOMAIN}, {"workspace": obj({})})]},
}


def _text(high: int) -> Schema:
    return {**TEXT, "minLength": 1, "maxLength": high}


def _labelled(**fields: Schema) -> Schema:
    return {"type": "array", "items": obj({"id": LABEL, **fields})}


# agent-context-api.md 6.3: what a schema can state. Distinct ids, distinct normalised terms,
# citations inside the set's collections and a query with a word are the domain's to refuse.
_SET_ITEMS: dict[str, Schema] = {
    "description": {"type": "string", "maxLength": 2000},
    "verifiedAnswers": {"type": "array", "maxItems": 200, "items": obj(
        {"id": LABEL, "question": _text(1000), "answer": _text(8000)},
        {"citations": {"type": "array", "maxItems": 20,
                       "items": {"type": "string", "pattern": "^[^/]+/.+$"}}})},
    "definitions": {"type": "array", "maxItems": 500, "items": obj(
        {"term": _text(200), "definition": _text(4000)},
        {"aliases": {"type": "array", "maxItems": 20, "items": _text(200)}})},
    "instructions": {**_labelled(text=_text(4000)), "maxItems": 50},
    "requiredEvidence": {**_labelled(description=_text(1000), query=_text(1000)),
                         "maxItems": 20},
    "queryTemplates": {"type": "array", "maxItems": 50, "uniqueItems": True,
                       "items": {"type": "string"}},
}
_SET_REQUIRED: dict[str, Schema] = {
    "name": _text(100),
    "collections": {"type": "array", "maxItems": 50, "uniqueItems": True, "items": NAME}}
_SET_ID: Schema = {"type": "string", "minLength": 1}
_LIMIT_OF = {"type": "integer", "minimum": 1}
_MATCHES = {**_LIMIT_OF, "maximum": 50, "default": 5}

BODIES.update({
    "set_member": obj({"subject": SUBJECT,
                       "role": {"type": "string",
                                "enum": ["owner", "admin", "member", "viewer"]}}),
    "create_context_set": obj({"id": LABEL, **_SET_REQUIRED}, _SET_ITEMS),
    "replace_context_set": obj(_SET_REQUIRED, {"id": LABEL, **_SET_ITEMS}),
    # agent-context-api.md 4.2, 9.1
    "create_credential": obj(
        {"name": _text(100),
         "scopes": {"type": "array", "minItems": 1, "uniqueItems": True,
                    "items": {"type": "string", "enum": ["context:read", "queries:run"]}},
         "expiresInDays": {"type": "integer", "minimum": 1, "maximum": 365}},
        {"contextSetId": _SET_ID}),
    "agent_list_context_sets": obj({}, {"query": {"type": "string", "maxLength": 200},
                                        "limit": {**_LIMIT_OF, "maximum": 100, "default": 20}}),
    "agent_get_context_set": obj({}, {"contextSetId": _SET_ID}),
    "agent_lookup": obj({"term": _text(200)},
                        {"contextSetId": _SET_ID, "limit": _MATCHES}),
    "agent_match": obj({"question": _text(4000)},
                       {"contextSetId": _SET_ID, "limit": _MATCHES}),
})
# path parameters narrower than any string
PATH_PARAMS: dict[str, Schema] = {"member": SUBJECT_VALUE}

# The points in time a read may be asked for: at most one of them (an exploded object).
_AS_OF: Schema = {
    "name": "point", "in": "query", "required": False, "style": "form", "explode": True,
    "description": "asOf (RFC 3339) or asOfPosition (a log position), not both",
    "schema": {"type": "object", "maxProperties": 1, "additionalProperties": False,
               "properties": {"asOf": TIMESTAMP, "asOfPosition": POSITION}}}
_LIMIT: Schema = {"type": "string", "pattern": "^(?:[1-9][0-9]{0,2}|1000)$"}
_CURSOR: Schema = {"type": "string", "description": "a nextCursor this route returned"}
_FLAG: Schema = {"type": "string", "description": "on exactly when the value is true"}

QUERY: dict[str, list[Schema]] = {
    "asOf": [_AS_OF],
    "asOfPosition": [],  # documented with asOf
    "limit": [{"name": "limit", "in": "query", "required": False, "schema": _LIMIT}],
    "cursor": [{"name": "cursor", "in": "query", "required": False, "schema": _CURSOR}],
    "force": [{"name": "force", "in": "query", "required": False, "schema": _FLAG}],
    "dryRun": [{"name": "dryRun", "in": "query", "required": False, "schema": _FLAG}],
}


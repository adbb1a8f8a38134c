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


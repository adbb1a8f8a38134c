"""The documented shapes: value rules as JSON Schema, and every response body as rendered.

These state what the service enforces and writes (spec sections 1 and 2), so a client or a fuzzer
reading the document sends requests the service accepts and can check every answer. Values whose
full rule no regular expression states (sizes, durations) are documented by a pattern every value
of which is valid.
"""

from __future__ import annotations

from typing import Any

from context_service.contract.values import (
    DIGEST,
    DURATION,
    FREE,
    INT64,
    KIND,
    LABEL,
    NAME,
    PERMISSION,
    POSITION,
    SIZE,
    SPACE,
    STRINGS,
    SUBDOMAIN,
    SUBJECT_VALUE,
    TEXT,
    TIMESTAMP,
)

Schema = dict[str, Any]
__all__ = ["DIGEST", "DURATION", "FREE", "INT64", "KIND", "LABEL", "NAME", "PERMISSION",
           "POSITION", "SIZE", "SPACE", "STRINGS", "SUBDOMAIN", "SUBJECT_VALUE", "TEXT",
           "TIMESTAMP"]



def obj(required: dict[str, Schema], optional: dict[str, Schema] | None = None) -> Schema:
    """A closed object: these keys only, the required ones always present."""
    properties = {**required, **(optional or {})}
    out: Schema = {"type": "object", "properties": properties, "additionalProperties": False}
    if required:
        out["required"] = list(required)
    return out


def items(schema: Schema, **more: Schema) -> Schema:
    return obj({"items": {"type": "array", "items": schema}}, more)


def ref(name: str) -> Schema:
    return {"$ref": f"#/components/schemas/{name}"}


SUBJECT = obj({"kind": KIND, "name": TEXT})
SOURCE = obj({"context": {"type": "string"}, "type": {"type": "string"},
              "revision": {"type": "string"}})
_STAMP = {"type": "string", "format": "date-time"}
_STR: Schema = {"type": "string"}
_SOME_STRINGS: Schema = {"type": "array", "minItems": 1, "items": _STR}  # omitted when empty
_SCORE: Schema = {"type": "number", "minimum": 0, "maximum": 1}
# a context set's curated items, each omitted when empty (agent-context-api.md 6.1)
_SET_ITEMS: dict[str, Schema] = {
    "verifiedAnswers": {"type": "array", "minItems": 1, "items": obj(
        {"id": _STR, "question": _STR, "answer": _STR}, {"citations": _SOME_STRINGS})},
    "definitions": {"type": "array", "minItems": 1, "items": obj(
        {"term": _STR, "definition": _STR}, {"aliases": _SOME_STRINGS})},
    "instructions": {"type": "array", "minItems": 1, "items": obj({"id": _STR, "text": _STR})},
    "requiredEvidence": {"type": "array", "minItems": 1, "items": obj(
        {"id": _STR, "description": _STR, "query": _STR})},
}

RESPONSES: dict[str, Schema] = {
    "Subject": obj({"kind": {"type": "string"}, "name": {"type": "string"}}),
    "Revision": obj(
        {"id": {"type": "string"}, "createdAt": _STAMP, "operation": {"type": "string"},
         "files": INT64, "bytes": INT64},
        {"producer": {"type": "string"}, "parameters": STRINGS,
         "sources": {"type": "array", "items": SOURCE}}),
    "Grant": obj({"subject": ref("Subject"), "permissions": {"type": "array",
                                                               "items": {"type": "string"}},
                  "createdAt": _STAMP}),
    "Consumer": obj({"subject": ref("Subject"), "kind": {"type": "string"},
                     "name": {"type": "string"},
                     "accessMode": {"type": "string", "enum": ["readOnly", "readWrite"]},
                     "active": {"type": "boolean"}, "desired": {"type": "boolean"},
                     "since": _STAMP}),
    "ContextResource": obj(
        {"name": {"type": "string"}, "namespace": {"type": "string"},
         "type": {"type": "string"},
         "status": {"type": "string", "enum": ["provisioning", "ready"]},
         "storage": obj({"backend": {"type": "string"}, "size": {"type": "string"},
                         "accessMode": {"type": "string"}},
                        {"storageClass": {"type": "string"}}),
         "attachment": obj({"kind": {"const": "pvc"}, "claimName": {"type": "string"}})},
        {"currentRevision": {"type": "string"},
         "revisions": {"type": "array", "items": ref("Revision")},
         "effectiveAccess": {"type": "array", "items": PERMISSION},
         "consumers": {"type": "array", "items": ref("Consumer")}}),
    "AuditEvent": obj({"time": _STAMP, "action": {"type": "string"}, "subject": ref("Subject")},
                      {"target": ref("Subject")}),
    "HistoryEvent": obj({"position": {"type": "integer", "minimum": 1}, "time": _STAMP,
                         "name": {"type": "string"}, "actor": {"type": "string"},
                         "data": {"type": "object"}}),
    "Snapshot": obj(
        {"name": {"type": "string"}, "contextName": {"type": "string"},
         "namespace": {"type": "string"},
         "status": {"type": "string", "enum": ["creating", "ready", "failed"]},
         "snapshotName": {"type": "string"}, "sourceClaimName": {"type": "string"},
         "createdAt": _STAMP},
        {"revision": {"type": "string"}, "snapshotClass": {"type": "string"},
         "protected": {"const": True}, "labels": STRINGS, "error": {"type": "string"}}),
    "GarbageCollection": obj({"dryRun": {"type": "boolean"}},
                             {"deleted": {"type": "array", "items": ref("Snapshot")},
                              "kept": {"type": "array", "items": ref("Snapshot")}}),
    "Capabilities": obj({"snapshots": {"type": "boolean"}, "clones": {"type": "boolean"},
                         "restore": {"type": "boolean"}},
                        {"driver": {"type": "string"}, "snapshotClass": {"type": "string"},
                         "reason": {"type": "string"}}),
    "QueryRecord": obj({"id": {"type": "string"}, "context": {"type": "string"},
                        "type": {"type": "string"}, "revision": {"type": "string"},
                        "text": {"type": "string"}, "source": SOURCE},
                       {"title": {"type": "string"},
                        "keywords": {"type": "array", "items": {"type": "string"}},
                        "file": {"type": "string"},
                        "validFrom": {"type": "string", "format": "date-time"},
                        "validTo": {"type": "string", "format": "date-time"},
                        "supersedes": {"type": "array", "items": {"type": "string"}},
                        "factKey": {"type": "string"},
                        "fields": {"type": "array", "items": obj(
                            {"name": {"type": "string"},
                             "type": {"type": "string",
                                      "enum": ["number", "money", "date", "boolean", "text"]},
                             "value": {}},
                            {"span": obj({"start": {"type": "integer"},
                                          "end": {"type": "integer"}})})}}),
    "QueryResult": obj({"score": {"type": "integer", "minimum": 1},
                        "record": ref("QueryRecord")}),
    "QueryResponse": items(ref("QueryResult"), nextCursor={"type": "string"},
                           unavailable={"type": "array", "items": {"type": "string"}}),
    "StorageClass": obj({"name": {"type": "string"}, "default": {"type": "boolean"},
                         "provisioner": {"type": "string"},
                         "volumeBindingMode": {"type": "string"},
                         "reclaimPolicy": {"type": "string"},
                         "allowVolumeExpansion": {"type": "boolean"}}),
    "Pool": obj(
        {"name": {"type": "string"},
         "status": {"type": "string", "enum": ["provisioning", "ready"]},
         "replicas": {"type": "integer"}, "readyReplicas": {"type": "integer"},
         "sandboxSelector": {"type": "string"},
         "workspace": obj({"size": {"type": "string"}, "accessMode": {"type": "string"}},
                          {"storageClass": {"type": "string"}, "claimName": {"type": "string"},
                           "readOnly": {"type": "boolean"}})},
        {"sandboxProfile": {"type": "string"}, "warmPoolRef": {"type": "string"},
         "resources": {"type": "array", "items": obj({"kind": {"type": "string"},
                                                       "name": {"type": "string"},
                                                       "status": {"type": "string"}})}}),
    "Health": obj({"status": {"const": "ok"}}),
    # agent-context-api.md 3.3, 6.1, 4.1
    "Member": obj({"subject": ref("Subject"),
                   "role": {"type": "string", "enum": ["owner", "admin", "member", "viewer"]},
                   "since": _STAMP}),
    "ContextSet": obj(
        {"id": _STR, "name": _STR,
         "status": {"type": "string", "enum": ["active", "archived"]},
         "version": {"type": "integer", "minimum": 1},
         "collections": {"type": "array", "items": _STR},
         "createdAt": _STAMP, "updatedAt": _STAMP},
        {"description": _STR, **_SET_ITEMS, "queryTemplates": _SOME_STRINGS}),
    # agent-context-api.md 9.1
    "AgentContextSet": obj(
        {"id": _STR, "name": _STR, "version": {"type": "integer", "minimum": 1},
         "updatedAt": _STAMP, "collections": {"type": "array", "items": _STR}},
        {"description": _STR, **_SET_ITEMS, "queryTemplates": {
            "type": "array", "minItems": 1, "items": obj(
                {"id": _STR, "description": _STR,
                 "parameters": {"type": "array", "items": obj(
                     {"name": _STR, "type": _STR, "required": {"type": "boolean"}},
                     {"default": {}})},
                 "maxRows": {"type": "integer"}, "timeoutMs": {"type": "integer"}})}}),
    "ContextSetSummary": obj(
        {"id": _STR, "name": _STR, "version": {"type": "integer", "minimum": 1},
         "collections": {"type": "array", "items": _STR}},
        {"description": _STR, "score": _SCORE}),
    "DefinitionMatch": obj(
        {"contextSetId": _STR, "term": _STR, "definition": _STR,
         "match": {"type": "string", "enum": ["exact_term", "exact_alias", "words"]},
         "score": _SCORE},
        {"aliases": _SOME_STRINGS}),
    "AnswerMatch": obj(
        {"contextSetId": _STR, "id": _STR, "question": _STR, "answer": _STR,
         "match": {"type": "string", "enum": ["exact", "words"]}, "score": _SCORE},
        {"citations": _SOME_STRINGS}),
    "Credential": obj(
        {"id": {"type": "string", "pattern": "^[0-9a-f]{16}$"}, "name": {"type": "string"},
         "scopes": {"type": "array", "minItems": 1,
                    "items": {"type": "string", "enum": ["context:read", "queries:run"]}},
         "createdBy": {"type": "string"}, "createdAt": _STAMP, "expiresAt": _STAMP,
         "status": {"type": "string", "enum": ["active", "expired", "revoked"]}},
        {"contextSetId": {"type": "string"}, "revokedAt": _STAMP,
         "revokedBy": {"type": "string"}}),
}
# the create answer alone carries the token (agent-context-api.md 4.1)
RESPONSES["CreatedCredential"] = {**RESPONSES["Credential"], "required": [
    *RESPONSES["Credential"]["required"], "token"], "properties": {
    **RESPONSES["Credential"]["properties"],
    "token": {"type": "string", "pattern": "^bdk_[0-9a-f]{16}_[A-Za-z0-9_-]{43}$"}}}

# operationId -> success body (None: no body; absent: an undescribed object)
SUCCESS: dict[str, Schema | None] = {
    "healthz": ref("Health"),
    "create_context": ref("ContextResource"),
    "list_contexts": items(ref("ContextResource")),
    "get_context": ref("ContextResource"),
    "delete_context": None,
    "list_revisions": items(ref("Revision")),
    "publish_revision": ref("ContextResource"),
    "publish_query_index": None,
    "query": ref("QueryResponse"),
    "list_grants": items(ref("Grant")),
    "set_grant": ref("ContextResource"),
    "revoke_grant": ref("ContextResource"),
    "list_consumers": items(ref("Consumer")),
    "attach_consumer": ref("ContextResource"),
    "detach_consumer": ref("ContextResource"),
    "read_audit": items(ref("AuditEvent"), nextCursor={"type": "string"}),
    "read_history": items(ref("HistoryEvent"), nextCursor={"type": "string"}),
    "create_snapshot": ref("Snapshot"),
    "list_snapshots": items(ref("Snapshot")),
    "get_snapshot": ref("Snapshot"),
    "create_clone": ref("ContextResource"),
    "restore": ref("ContextResource"),
    "set_retention": ref("ContextResource"),
    "collect_garbage": ref("GarbageCollection"),
    "capabilities": ref("Capabilities"),
    "create_pool": ref("Pool"),
    "list_pools": items(ref("Pool")),
    "get_pool": ref("Pool"),
    "release_pool": None,
    "storage_classes": items(ref("StorageClass")),
    "list_members": items(ref("Member")),
    "set_member": ref("Member"),
    "remove_member": None,
    "create_context_set": ref("ContextSet"),
    "list_context_sets": items(ref("ContextSet")),
    "get_context_set": ref("ContextSet"),
    "replace_context_set": ref("ContextSet"),
    "archive_context_set": None,
    "create_credential": ref("CreatedCredential"),
    "list_credentials": items(ref("Credential")),
    "get_credential": ref("Credential"),
    "revoke_credential": None,
    "list_workspaces": obj({"subject": ref("Subject"), "items": {"type": "array", "items": obj(
        {"namespace": _STR, "role": RESPONSES["Member"]["properties"]["role"]})}}),
    "agent_list_context_sets": items(ref("ContextSetSummary")),
    "agent_get_context_set": ref("AgentContextSet"),
    "agent_lookup": items(ref("DefinitionMatch")),
    "agent_match": items(ref("AnswerMatch")),
}

ERROR_CODES = ["invalid_request", "unauthenticated", "not_found", "method_not_allowed",
               "already_exists", "in_use", "internal_error", "unsupported", "unavailable",
               "conflict"]  # workspace routes (agent-context-api.md 3.3)
# The /v1 family (spec 1.1.7) and the /api family (the Agent Context API) answer errors
# with different bodies.
ERRORS: dict[str, Schema] = {
    "Error": obj({"error": {"type": "string", "enum": ERROR_CODES},
                  "message": {"type": "string"}}),
    # agent-context-api.md 1.3
    "ApiError": obj({"code": {"type": "string", "pattern": "^[A-Z][A-Z_]*$"},
                     "message": {"type": "string"}},
                    {"details": {"oneOf": [
                        {"type": "array", "items": obj({"path": {"type": "string"},
                                                        "message": {"type": "string"}})},
                        {"type": "object"}]}}),
}


def error_schema(path: str) -> str:
    """The error body of a path's family."""
    return "ApiError" if path.startswith("/api/") else "Error"

# operationId -> the permission on the named context it requires (spec 1.2), or on a workspace
# route the workspace permission (``kind:action``); the document states it as ``x-permission``.
# Lists and the query judge each context on its own.
REQUIRES: dict[str, str] = {
    "get_context": "read", "delete_context": "administer", "list_revisions": "read",
    "publish_revision": "write", "publish_query_index": "write", "list_grants": "administer",
    "set_grant": "administer", "revoke_grant": "administer", "list_consumers": "read",
    "attach_consumer": "attach", "detach_consumer": "attach", "read_audit": "administer",
    "read_history": "administer", "create_snapshot": "write", "list_snapshots": "read",
    "get_snapshot": "read", "create_clone": "derive", "restore": "write",
    "set_retention": "administer", "collect_garbage": "administer", "capabilities": "read",
    # workspace routes: the caller's workspace permission (agent-context-api.md 2, 3.2)
    "list_members": "context:read", "set_member": "members:manage",
    "remove_member": "members:manage", "create_context_set": "context_set:manage",
    "list_context_sets": "context:read", "get_context_set": "context:read",
    "replace_context_set": "context_set:manage", "archive_context_set": "context_set:manage",
    "create_credential": "agent_credential:manage", "list_credentials": "agent_credential:manage",
    "get_credential": "agent_credential:manage", "revoke_credential": "agent_credential:manage",
}

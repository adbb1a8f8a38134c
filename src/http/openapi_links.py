"""OpenAPI links, worked out from the route table: an operation that answers a resource links to
every operation whose path parameters that resource names, so a client (or a stateful fuzzer)
can go from a create to everything that can be done with what it created.

A resource names parameters only below a path prefix (a pool's ``name`` is not a context's); a
namespace is a workspace's too, so a context or a member leads to the workspace routes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

WORKSPACE = ("/v1/namespaces/{namespace}/members", "/v1/namespaces/{namespace}/context-sets",
             "/v1/namespaces/{namespace}/query-templates", "/api/w/{wsId}")


def _body(pointer: str) -> str:
    return f"$response.body#{pointer}"


@dataclass(frozen=True, slots=True)
class Resource:
    """Where a resource's parameters apply, and the runtime expression of each."""

    prefixes: tuple[str, ...]
    parameters: dict[str, str]
    # request body fields it fills (the snapshot a clone starts from), on any route
    body: dict[str, str] = field(default_factory=dict)
    # a parameter a path link must use: the operations of what the resource belongs to are
    # linked from that owner already
    anchor: str | None = None
    # request body fields it fills on the operations its path links reach only
    path_body: dict[str, str] = field(default_factory=dict)


_CONTEXT = Resource(
    ("/v1/namespaces/{namespace}/contexts", "/v1/namespaces/{namespace}/query", *WORKSPACE),
    {"namespace": _body("/namespace"), "name": _body("/name"), "wsId": _body("/namespace")},
    {"revision": _body("/currentRevision")})  # what a query index is published for
_CREDENTIAL = Resource(("/api/w/{wsId}/agent-credentials/{id}",),
                       {"wsId": "$request.path.wsId", "id": _body("/id")})
# resource schema -> resource
RESOURCES: dict[str, Resource] = {
    "ContextResource": _CONTEXT,
    "Snapshot": Resource(("/v1/namespaces/{namespace}/contexts/{name}",),
                         {"namespace": _body("/namespace"), "name": _body("/contextName"),
                          "snapshot": _body("/name")},
                         {"snapshot": _body("/name")}, anchor="snapshot"),
    "Pool": Resource(("/v1/sandbox-pools",), {"name": _body("/name")}),
    # a member's answer carries no namespace: it is the request's
    "Member": Resource(WORKSPACE, {
        "namespace": "$request.path.namespace", "wsId": "$request.path.namespace",
        "member": "{$response.body#/subject/kind}:{$response.body#/subject/name}"}),
    "ContextSet": Resource(("/v1/namespaces/{namespace}/context-sets/{id}",),
                           {"namespace": "$request.path.namespace", "id": _body("/id"),
                            "wsId": "$request.path.namespace"},
                           {"contextSetId": _body("/id")}, anchor="id"),
    "Credential": _CREDENTIAL,
    "CreatedCredential": _CREDENTIAL,
    # a released pack leads to its replay, recomputed with the task it answered
    "ContextPack": Resource(("/api/agent/v1/replays/{replayId}",),
                            {"replayId": _body("/replayId")}, path_body={"task": _body("/task")}),
}


def add_links(paths: dict[str, dict[str, Any]], components: dict[str, Any]) -> None:
    """Give every operation answering a resource links to the operations it makes reachable
    (``components``: the document's schemas, which request bodies may refer to)."""
    operations = [(path, method, op) for path, ops in paths.items() for method, op in ops.items()]
    for _, _, source in operations:
        for status, response in source["responses"].items():
            resource = _resource_of(response)
            if not status.startswith("2") or resource is None:
                continue
            links = {}
            for path, _, target in operations:
                link = _link(resource, path, target, components)
                if link is not None:
                    links[target["operationId"]] = link
            if links:
                response["links"] = links
    for path, ops in paths.items():
        _link_removal(path, ops, components)


def _link_removal(path: str, ops: dict[str, Any], components: dict[str, Any]) -> None:
    """A ``DELETE`` whose body names what the ``PUT`` of the same path set (a grant's subject,
    a consumer) is linked from that ``PUT`` with the names its request used."""
    put, remove = ops.get("put"), ops.get("delete")
    if put is None or remove is None or "requestBody" not in remove:
        return
    sent = _properties(_body_schema(put, components))
    fields = {}
    for name in _body_schema(remove, components).get("required", ()):
        if name in sent:
            fields[name] = f"$request.body#/{name}"
        elif "subject" in sent:
            fields[name] = f"$request.body#/subject/{name}"
    wanted = re.findall(r"\{(\w+)\}", path)
    link = {"operationId": remove["operationId"],
            "parameters": {f"path.{n}": f"$request.path.{n}" for n in wanted},
            "requestBody": fields}
    for status, response in put["responses"].items():
        if status.startswith("2"):
            response.setdefault("links", {})[remove["operationId"]] = link


def _resource_of(response: dict[str, Any]) -> Resource | None:
    schema = response.get("content", {}).get("application/json", {}).get("schema", {})
    return RESOURCES.get(schema.get("$ref", "").rsplit("/", 1)[-1])


def _link(resource: Resource, path: str, target: dict[str, Any],
          components: dict[str, Any]) -> dict[str, Any] | None:
    wanted = re.findall(r"\{(\w+)\}", path)
    if not set(wanted) <= set(resource.parameters):
        return None
    fields = _body_fields(resource, target, components)
    by_path = (path.startswith(resource.prefixes) and bool(wanted)
               and (resource.anchor is None or resource.anchor in wanted))
    if by_path:
        properties = _properties(_body_schema(target, components))
        fields |= {k: v for k, v in resource.path_body.items() if k in properties}
    if not by_path and not fields:
        return None
    link: dict[str, Any] = {"operationId": target["operationId"]}
    if wanted:
        link["parameters"] = {f"path.{name}": resource.parameters[name] for name in wanted}
    if fields:
        link["requestBody"] = fields
    return link


def _body_schema(operation: dict[str, Any], components: dict[str, Any]) -> dict[str, Any]:
    body = operation.get("requestBody", {}).get("content", {}).get("application/json", {})
    schema = dict(body.get("schema", {}))
    ref = schema.get("$ref")
    return dict(components.get(ref.rsplit("/", 1)[-1], {})) if ref else schema


def _body_fields(resource: Resource, target: dict[str, Any],
                 components: dict[str, Any]) -> dict[str, str]:
    properties = _properties(_body_schema(target, components))
    return {k: v for k, v in resource.body.items() if k in properties}


def _properties(schema: dict[str, Any]) -> set[str]:
    found = set(schema.get("properties", {}))
    for key in ("allOf", "anyOf", "oneOf"):
        for part in schema.get(key, ()):
            found |= _properties(part)
    return found

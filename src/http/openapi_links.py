"""OpenAPI links, worked out from the route table: an operation that answers a resource links to
every operation whose path parameters that resource names, so a client (or a stateful fuzzer)
can go from a create to everything that can be done with what it created.

A resource names parameters only below a path prefix (a pool's ``name`` is not a context's).
"""

from __future__ import annotations

import re
from typing import Any

# resource schema -> (path prefixes the parameters belong to, parameter -> JSON pointer); a
# namespace holding a context is not a workspace (members, context sets) yet
RESOURCES: dict[str, tuple[tuple[str, ...], dict[str, str]]] = {
    "ContextResource": (("/v1/namespaces/{namespace}/contexts", "/v1/namespaces/{namespace}/query"),
                        {"namespace": "/namespace", "name": "/name"}),
    "Snapshot": (("/v1/namespaces/{namespace}/contexts/{name}",),
                 {"namespace": "/namespace", "name": "/contextName", "snapshot": "/name"}),
    "Pool": (("/v1/sandbox-pools",), {"name": "/name"}),
}
# request body fields a resource fills (the snapshot a clone or restore starts from)
BODY_FIELDS: dict[str, dict[str, str]] = {"Snapshot": {"snapshot": "/name"}}


def add_links(paths: dict[str, dict[str, Any]]) -> None:
    """Give every operation answering a resource links to the operations it makes reachable."""
    operations = [(path, method, op) for path, ops in paths.items() for method, op in ops.items()]
    for _, _, source in operations:
        for status, response in source["responses"].items():
            resource = _resource_of(response)
            if not status.startswith("2") or resource is None:
                continue
            links = {}
            for path, _, target in operations:
                link = _link(resource, path, target)
                if link is not None:
                    links[target["operationId"]] = link
            if links:
                response["links"] = links


def _resource_of(response: dict[str, Any]) -> str | None:
    schema = response.get("content", {}).get("application/json", {}).get("schema", {})
    name = schema.get("$ref", "").rsplit("/", 1)[-1]
    return name if name in RESOURCES else None


def _link(resource: str, path: str, target: dict[str, Any]) -> dict[str, Any] | None:
    prefixes, pointers = RESOURCES[resource]
    wanted = re.findall(r"\{(\w+)\}", path)
    if not path.startswith(prefixes) or not wanted or not set(wanted) <= set(pointers):
        return None
    if resource == "Snapshot" and "snapshot" not in wanted and not _body_fields(resource, target):
        return None  # the context's own operations are linked from the context already
    link: dict[str, Any] = {"operationId": target["operationId"], "parameters": {
        f"path.{name}": f"$response.body#{pointers[name]}" for name in wanted}}
    fields = _body_fields(resource, target)
    if fields:
        link["requestBody"] = {k: f"$response.body#{v}" for k, v in fields.items()}
    return link


def _body_fields(resource: str, target: dict[str, Any]) -> dict[str, str]:
    fields = BODY_FIELDS.get(resource, {})
    body = target.get("requestBody", {}).get("content", {}).get("application/json", {})
    properties = _properties(body.get("schema", {}))
    return {k: v for k, v in fields.items() if k in properties}


def _properties(schema: dict[str, Any]) -> set[str]:
    found = set(schema.get("properties", {}))
    for key in ("allOf", "anyOf", "oneOf"):
        for part in schema.get(key, ()):
            found |= _properties(part)
    return found

"""The OpenAPI document matches the real routes and request bodies, and states every operation's
request and answer (it is generated from the routes' declared types). The module's tests share
one service: they only read the document and the routes."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from context_service import bootstrap
from context_service.http.openapi import body_of, openapi_path, typed
from tests.api.conftest import Api

pytestmark = pytest.mark.shared_service


def _properties(schema: dict[str, Any]) -> set[str]:
    found = set(schema.get("properties", {}))
    for key in ("allOf", "anyOf", "oneOf"):
        for part in schema.get(key, ()):
            found |= _properties(part)
    return found


def _fields(body: type[msgspec.Struct]) -> set[str]:
    _, components = msgspec.json.schema_components([body])
    return set(components[body.__name__]["properties"])


def test_every_route_and_body_is_documented(api: Api, container: bootstrap.Container) -> None:
    doc = api.get("/schema/openapi.json").json()
    app = bootstrap.app(container)
    documented = {(path, method) for path, ops in doc["paths"].items() for method in ops}
    served = set()
    for route in app.routes:
        for handler in getattr(route, "route_handlers", []):
            if not handler.resolve_include_in_schema():
                continue
            for method in handler.http_methods:
                if method in ("OPTIONS", "HEAD"):
                    continue
                served.add((openapi_path(route.path_format), method.lower()))
                body = body_of(handler)
                op = doc["paths"][openapi_path(route.path_format)][method.lower()]
                if body is None:
                    assert "requestBody" not in op
                    continue
                schema = op["requestBody"]["content"]["application/json"]["schema"]
                if "$ref" in schema:
                    schema = doc["components"]["schemas"][schema["$ref"].rsplit("/", 1)[1]]
                # the documented fields are exactly those the route decodes
                assert _properties(schema) == _fields(body), op["operationId"]
    assert documented == served
    assert ("/v1/contexts", "post") in served


def test_create_operations_link_to_what_they_make_reachable(api: Api) -> None:
    doc = api.get("/schema/openapi.json").json()
    created = doc["paths"]["/v1/contexts"]["post"]["responses"]["201"]["links"]
    context_ops = {op["operationId"] for path, ops in doc["paths"].items()
                   if path.startswith("/v1/namespaces/{namespace}/contexts/{name}")
                   and "{snapshot}" not in path for op in ops.values()}
    assert context_ops <= set(created)
    link = created["get_context"]
    assert link["parameters"] == {"path.namespace": "$response.body#/namespace",
                                  "path.name": "$response.body#/name"}
    pool = doc["paths"]["/v1/sandbox-pools"]["post"]["responses"]["201"]["links"]
    assert set(pool) == {"get_pool", "release_pool"}
    snapshot = doc["paths"]["/v1/namespaces/{namespace}/contexts/{name}/snapshots"]["post"]
    assert snapshot["responses"]["201"]["links"]["create_clone"]["requestBody"] == {
        "snapshot": "$response.body#/name"}


def _resolve(doc: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    ref = schema.get("$ref")
    if ref is None:
        return schema
    return _resolve(doc, doc["components"]["schemas"][ref.rsplit("/", 1)[1]])


def _states_something(doc: dict[str, Any], schema: dict[str, Any]) -> bool:
    """Not ``{}`` nor a bare ``{"type": "object"}``: named keys, items of a stated shape, or
    alternatives that each state something."""
    schema = _resolve(doc, schema)
    if schema.get("properties"):
        return True
    if schema.get("type") == "array":
        return _states_something(doc, schema.get("items", {}))
    branches = schema.get("anyOf") or schema.get("oneOf") or schema.get("allOf")
    return bool(branches) and all(_states_something(doc, b) for b in branches)


def test_every_operation_states_its_request_and_answer(api: Api,
                                                      container: bootstrap.Container) -> None:
    doc = api.get("/schema/openapi.json").json()
    app = bootstrap.app(container)
    untyped = [h.handler_name for route in app.routes
               for h in getattr(route, "route_handlers", [])
               if h.resolve_include_in_schema() and not typed(h)]
    assert untyped == [], "every route declares its answer as Response[Struct]"
    for ops in doc["paths"].values():
        for method, op in ops.items():
            name = op["operationId"]
            success = {code: r for code, r in op["responses"].items() if code.startswith("2")}
            assert len(success) == 1, name
            [(code, answer)] = success.items()
            if code == "204":
                assert "content" not in answer, name
            else:
                [media] = answer["content"].values()
                assert _states_something(doc, media["schema"]), (name, media)
            body = op.get("requestBody")
            if method in ("post", "put") and body is not None:
                [media] = body["content"].values()
                assert _states_something(doc, media["schema"]), (name, media)
            for code, refusal in op["responses"].items():
                if code.startswith("2"):
                    continue
                [media] = refusal["content"].values()
                assert _states_something(doc, media["schema"]), (name, code)
    # a route renamed keeps its schemas: they come from its signature, not from its name
    assert doc["paths"]["/v1/contexts"]["post"]["requestBody"]["content"]["application/json"][
        "schema"] == {"$ref": "#/components/schemas/CreateContextRequest"}

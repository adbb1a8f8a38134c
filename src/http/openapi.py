"""The OpenAPI document, built from the registered routes.

Handlers read raw bodies (strict decoding is ours), so each declares its body in
``opt={"body": Struct}``; the document describes that body with the rules the route enforces
(``openapi_bodies``) and every answer as it is rendered (``openapi_shapes``), and links the
operations (``openapi_links``). It is made from the route table, so it cannot drift from the real
routes; a route without a documented shape falls back to its body Struct's schema.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Iterable
from typing import Any

import msgspec
from litestar.handlers import HTTPRouteHandler

from context_service.http import openapi_fields_templates as fields
from context_service.http import openapi_packs as packs
from context_service.http.openapi_bodies import BODIES, PATH_PARAMS, QUERY
from context_service.http.openapi_links import add_links
from context_service.http.openapi_shapes import (
    ERRORS,
    REQUIRES,
    RESPONSES,
    SUBJECT_VALUE,
    SUCCESS,
    error_schema,
)

# the entries of every operation; the pack and replay operations, and the studied-field and
# query-template ones, keep theirs in modules apart
DOCUMENTED_BODIES = {**BODIES, **packs.BODIES, **fields.BODIES}
DOCUMENTED_SUCCESS = {**SUCCESS, **packs.SUCCESS, **fields.SUCCESS}
DOCUMENTED_PATH_PARAMS = {**PATH_PARAMS, **packs.PATH_PARAMS, **fields.PATH_PARAMS}
DOCUMENTED_REQUIRES = {**REQUIRES, **fields.REQUIRES}
DOCUMENTED_ERRORS = {**packs.ERRORS, **fields.ERRORS}
_PARAM = re.compile(r"\{(\w+):\w+\}")
ERROR_SCHEMA = ERRORS["Error"]
BEARER = {"type": "http", "scheme": "bearer",
          "description": "an agent credential: bdk_<16 hex>_<43 base64url>"}
SUBJECT_HEADER = "X-Context-Subject"
POSITION_HEADER = {"X-Context-Position": {
    "description": "log position of the write", "required": False,
    "schema": {"type": "string", "pattern": "^[1-9][0-9]*$"}}}


def openapi_path(path: str) -> str:
    return _PARAM.sub(r"{\1}", path)


def operation_id(handler: HTTPRouteHandler, path: str) -> str:
    """The handler's name; agent routes get an ``agent_`` prefix, since their handlers are
    named like the ``/v1`` routes they mirror (``get_context_set``) and ids must be unique."""
    name = handler.handler_name
    if path.startswith("/api/agent/") and not name.startswith("agent_"):
        return "agent_" + name
    return name


def build(handlers: Iterable[HTTPRouteHandler], title: str, version: str) -> dict[str, Any]:
    handlers = list(handlers)
    undocumented = [h.opt["body"] for h in handlers if h.opt.get("body") is not None
                    and not {operation_id(h, openapi_path(p)) for p in h.paths}
                    <= set(DOCUMENTED_BODIES)]
    _, components = msgspec.json.schema_components(
        undocumented, ref_template="#/components/schemas/{name}")
    components.update(RESPONSES)
    components.update(packs.RESPONSES)
    components.update(fields.RESPONSES)
    components.update(ERRORS)
    paths: dict[str, dict[str, Any]] = {}
    for handler in handlers:
        for raw_path in sorted(handler.paths):
            path = openapi_path(raw_path)
            for method in sorted(handler.http_methods):
                paths.setdefault(path, {})[method.lower()] = _operation(handler, path, method)
    add_links(paths)
    return {"openapi": "3.1.0", "info": {"title": title, "version": version},
            "paths": dict(sorted(paths.items())),
            "components": {"schemas": dict(sorted(components.items())),
                           "securitySchemes": {"agentCredential": BEARER}}}


def _operation(handler: HTTPRouteHandler, path: str, method: str) -> dict[str, Any]:
    doc = inspect.getdoc(handler.fn) or ""
    name = operation_id(handler, path)
    op: dict[str, Any] = {"operationId": name, "summary": doc.split("\n")[0]}
    if name in DOCUMENTED_REQUIRES:
        op["x-permission"] = DOCUMENTED_REQUIRES[name]
    params: list[dict[str, Any]] = [
        {"name": n, "in": "path", "required": True,
         "schema": DOCUMENTED_PATH_PARAMS.get(n, {"type": "string"})}
        for n in re.findall(r"\{(\w+)\}", path)]
    for query in handler.opt.get("query", ()):
        params += QUERY.get(query, [{"name": query, "in": "query", "required": False,
                                     "schema": {"type": "string"}}])
    if path.startswith("/api/agent/"):
        op["security"] = [{"agentCredential": []}]
    if path.startswith(("/v1/contexts", "/v1/namespaces/", "/v1/workspaces", "/api/w/")):
        params.append({"name": SUBJECT_HEADER, "in": "header", "required": False,
                       "schema": SUBJECT_VALUE, "description": "kind:name of the caller"})
    if params:
        op["parameters"] = params
    body = handler.opt.get("body")
    if body is not None:
        schema = DOCUMENTED_BODIES.get(name, {"$ref": f"#/components/schemas/{body.__name__}"})
        op["requestBody"] = {"required": True,
                             "content": {"application/json": {"schema": schema}}}
    status = str(handler.opt.get("status", handler.status_code))
    error = {"description": "error", "content": {"application/json": {
        "schema": {"$ref": f"#/components/schemas/{error_schema(path)}"}}}}
    responses: dict[str, Any] = {}
    if int(status) >= 400:  # what this backend always answers; the shape is another backend's
        responses[status] = {**error, "description": "not supported by this backend"}
        status = "200"
    success: dict[str, Any] = {"description": "success"}
    shape = DOCUMENTED_SUCCESS.get(name, {"type": "object"})
    if status != "204" and shape is not None:
        success["content"] = {packs.MEDIA.get(name, "application/json"): {"schema": shape}}
    if method != "GET":
        success["headers"] = POSITION_HEADER
    bodies = DOCUMENTED_ERRORS.get(name, {})  # an error body narrower than the family's
    for code, description in handler.opt.get("errors", {}).items():  # statuses worth naming
        responses[code] = {**error, "description": description}
        if code in bodies:
            responses[code]["content"] = {"application/json": {"schema": bodies[code]}}
        if code in ("429", "503") and path.startswith("/api/"):
            responses[code]["headers"] = packs.RETRY_AFTER
    op["responses"] = {status: success, **responses, "default": error}
    return op


def document_bytes(handlers: Iterable[HTTPRouteHandler]) -> bytes:
    return msgspec.json.encode(build(handlers, "Context Service", "0.1.0"))

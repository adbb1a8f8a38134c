"""The OpenAPI document, built from the registered routes and their msgspec request bodies.

Handlers read raw bodies (strict decoding is ours), so each declares its body shape in
``opt={"body": Struct}``; this module turns the route table into the document, so it cannot
drift from the real routes.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Iterable
from typing import Any

import msgspec
from litestar.handlers import HTTPRouteHandler

_PARAM = re.compile(r"\{(\w+):\w+\}")
ERROR_SCHEMA = {"type": "object", "required": ["error", "message"], "additionalProperties": False,
                "properties": {"error": {"type": "string"}, "message": {"type": "string"}}}
# the /api/ family (agent-context-api.md §1.3)
API_ERROR_SCHEMA = {
    "type": "object", "required": ["code", "message"], "additionalProperties": False,
    "properties": {"code": {"type": "string", "pattern": "^[A-Z][A-Z_]*$"},
                   "message": {"type": "string"},
                   "details": {"oneOf": [
                       {"type": "array", "items": {
                           "type": "object", "required": ["path", "message"],
                           "additionalProperties": False,
                           "properties": {"path": {"type": "string"},
                                          "message": {"type": "string"}}}},
                       {"type": "object"}]}}}
BEARER = {"type": "http", "scheme": "bearer",
          "description": "an agent credential: bdk_<16 hex>_<43 base64url>"}


def openapi_path(path: str) -> str:
    return _PARAM.sub(r"{\1}", path)


def build(handlers: Iterable[HTTPRouteHandler], title: str, version: str) -> dict[str, Any]:
    handlers = list(handlers)
    bodies = [h.opt["body"] for h in handlers if h.opt.get("body") is not None]
    _, components = msgspec.json.schema_components(
        bodies, ref_template="#/components/schemas/{name}")
    components["Error"] = ERROR_SCHEMA
    components["ApiError"] = API_ERROR_SCHEMA
    paths: dict[str, dict[str, Any]] = {}
    for handler in handlers:
        for raw_path in sorted(handler.paths):
            path = openapi_path(raw_path)
            for method in sorted(handler.http_methods):
                paths.setdefault(path, {})[method.lower()] = _operation(handler, path)
    return {"openapi": "3.1.0", "info": {"title": title, "version": version},
            "paths": dict(sorted(paths.items())),
            "components": {"schemas": components, "securitySchemes": {"agentCredential": BEARER}}}


def _operation(handler: HTTPRouteHandler, path: str) -> dict[str, Any]:
    doc = inspect.getdoc(handler.fn) or ""
    op: dict[str, Any] = {"operationId": handler.handler_name, "summary": doc.split("\n")[0]}
    params = [{"name": n, "in": "path", "required": True, "schema": {"type": "string"}}
              for n in re.findall(r"\{(\w+)\}", path)]
    params += [{"name": n, "in": "query", "required": False, "schema": {"type": "string"}}
               for n in handler.opt.get("query", ())]
    if path.startswith("/api/agent/"):
        op["security"] = [{"agentCredential": []}]
    if path.startswith(("/v1/contexts", "/v1/namespaces/", "/v1/workspaces", "/api/w/")):
        params.append({"name": "X-Context-Subject", "in": "header", "required": False,
                       "schema": {"type": "string"}, "description": "kind:name of the caller"})
    if params:
        op["parameters"] = params
    body = handler.opt.get("body")
    if body is not None:
        op["requestBody"] = {"required": True, "content": {"application/json": {
            "schema": {"$ref": f"#/components/schemas/{body.__name__}"}}}}
    status = str(handler.opt.get("status", handler.status_code))
    success: dict[str, Any] = {"description": "success"}
    if status != "204":
        success["content"] = {"application/json": {"schema": {"type": "object"}}}
    family = "ApiError" if path.startswith("/api/") else "Error"
    error = {"description": "error", "content": {"application/json": {
        "schema": {"$ref": f"#/components/schemas/{family}"}}}}
    op["responses"] = {status: success}
    for code, description in handler.opt.get("errors", {}).items():  # statuses worth naming
        op["responses"][code] = {**error, "description": description}
    op["responses"]["default"] = error
    return op


def document_bytes(handlers: Iterable[HTTPRouteHandler]) -> bytes:
    return msgspec.json.encode(build(handlers, "Context Service", "0.1.0"))

"""The OpenAPI document matches the real routes and request bodies."""

from __future__ import annotations

import msgspec

from context_service import bootstrap
from context_service.http.openapi import openapi_path
from tests.api.conftest import Api


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
                body = handler.opt.get("body")
                op = doc["paths"][openapi_path(route.path_format)][method.lower()]
                if body is None:
                    assert "requestBody" not in op
                    continue
                ref = op["requestBody"]["content"]["application/json"]["schema"]["$ref"]
                name = ref.rsplit("/", 1)[1]
                _, expected = msgspec.json.schema_components(
                    [body], ref_template="#/components/schemas/{name}")
                assert doc["components"]["schemas"][name] == expected[name]
    assert documented == served
    assert ("/v1/contexts", "post") in served

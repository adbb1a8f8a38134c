"""Request times and dates at a month's end, with an offset and past microseconds, through each
route family: the served document's schema admits them (a client checking a request against it
refused the 29th-31st, offsets and years outside 1900-2099) and the route accepts them."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest

from tests.api.agent.packs_support import module_settings as module_settings  # the fixture
from tests.api.agent.templates_namespaced import templates
from tests.api.agent.templates_support import template_body
from tests.api.conftest import Api
from tests.api.namespaced import Namespaced, namespaced
from tests.api.sets_namespaced import seed_workspace

# one service for the module: every test speaks about a namespace of its own
pytestmark = [pytest.mark.postgres, pytest.mark.shared_service]
REVISION = "c" * 64


@pytest.fixture
def api(api: Api) -> Namespaced:
    return namespaced(api)


@pytest.fixture
def document(api: Namespaced) -> dict[str, Any]:
    found: dict[str, Any] = api.get("/schema/openapi.json").json()
    return found


def admitted(document: dict[str, Any], path: str, method: str, body: Any) -> bool:
    """Whether the operation's documented request body admits ``body``."""
    operation = document["paths"][path][method]
    schema = operation["requestBody"]["content"]["application/json"]["schema"]
    rooted = {**schema, "components": document["components"]}  # its $refs resolve here
    return jsonschema.Draft202012Validator(rooted).is_valid(body)


def admitted_as_of(document: dict[str, Any], path: str, value: str) -> bool:
    """Whether the operation's documented point in time admits ``?asOf=value``."""
    (point,) = [p for p in document["paths"][path]["get"]["parameters"] if p["name"] == "point"]
    return jsonschema.Draft202012Validator(point["schema"]).is_valid({"asOf": value})


def test_a_revision_published_at_a_month_s_end_with_an_offset(api: Namespaced,
                                                               document: dict[str, Any]) -> None:
    assert api.post("/v1/contexts", api.context_body()).status_code == 201
    body = {"id": REVISION, "createdAt": "2026-01-31T23:59:59.1234567+05:30",
            "operation": "sync"}
    revisions = "/v1/namespaces/{namespace}/contexts/{name}/revisions"
    assert admitted(document, revisions, "post", body)
    published = api.post(api.context + "/revisions", body)
    assert published.status_code == 201, published.text
    assert published.json()["revisions"][0]["createdAt"] == "2026-01-31T18:29:59.123456Z"
    moment = "2026-12-31t23:59:59-00:00"
    assert admitted_as_of(document, "/v1/namespaces/{namespace}/contexts/{name}", moment)
    read = api.get(f"{api.context}?asOf={moment}")
    assert read.status_code == 200, read.text
    assert read.json()["currentRevision"] == REVISION


def test_a_query_index_valid_to_a_month_s_end(api: Namespaced, document: dict[str, Any]) -> None:
    assert api.post("/v1/contexts", api.context_body()).status_code == 201
    published = api.post(api.context + "/revisions", {
        "id": REVISION, "createdAt": "2026-05-01T10:00:00Z", "operation": "sync"})
    assert published.status_code == 201, published.text
    record = {"id": "r", "context": "research-memory", "type": "memory", "revision": REVISION,
              "text": "the quarter's close", "validFrom": "2026-03-31T00:00:00+02:00",
              "validTo": "2026-12-31T23:59:59Z"}
    body = {"revision": REVISION, "records": [record]}
    index = "/v1/namespaces/{namespace}/contexts/{name}/query-index"
    assert admitted(document, index, "put", body)
    put = api.put(api.context + "/query-index", body)
    assert put.status_code == 204, put.text
    found = api.post(f"/v1/namespaces/{api.ns}/query", {"query": "quarter close"})
    assert found.status_code == 200, found.text
    assert [(i["record"]["id"], i["record"]["validFrom"], i["record"]["validTo"])
            for i in found.json()["items"]] == [
        ("r", "2026-03-30T22:00:00Z", "2026-12-31T23:59:59Z")]


def test_a_template_s_defaults_at_a_month_s_end(api: Namespaced,
                                                document: dict[str, Any]) -> None:
    ws = namespaced(api, "acme")
    seed_workspace(ws)
    parameters = [
        {"name": "since", "type": "timestamp", "required": False,
         "default": "2026-10-31 23:59:59.1234567-03:30"},
        {"name": "day", "type": "date", "required": False, "default": "2024-02-29"}]
    body = template_body("month-end", "SELECT :since AS since, :day AS day",
                         parameters)
    assert admitted(document, "/v1/namespaces/{namespace}/query-templates", "post", body)
    registered = ws.as_("user:alice").post(templates(ws), body)
    assert registered.status_code == 201, registered.text
    assert registered.json()["parameters"] == parameters

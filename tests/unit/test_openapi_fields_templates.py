"""The documented studied-field and query-template bodies (the contract Structs' schemas) say
what the routes check: a body the schema accepts passes the route's field rules, one it refuses
fails them, and "not blank" means what ``str.strip`` means for every code point."""

from __future__ import annotations

import re
import sys
from datetime import UTC, datetime
from typing import Any

import jsonschema
import msgspec
import pytest

from context_service.contract.agent import QueryFieldsRequest
from context_service.contract.query_templates import QueryTemplateRequest
from context_service.contract.schema import components
from context_service.contract.values import SPACE
from context_service.domain.errors import QueryTemplateInvalidError
from context_service.domain.query_template.commands import TemplateDraft
from context_service.domain.query_template.events import Parameter
from context_service.domain.query_template.validation import validate_request
from context_service.http.agent import fields_shapes
from context_service.http.agent.errors import ApiError

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def accepted(struct: type, body: dict[str, Any]) -> bool:
    """Whether the body is valid by the schema the document states for ``struct``."""
    defs = components([struct], "#/$defs/{name}")
    schema = {**defs[struct.__name__], "$defs": defs}
    return jsonschema.Draft202012Validator(schema).is_valid(body)


def test_the_documented_space_is_pythons() -> None:
    not_blank = re.compile(f"[^{SPACE}]")
    wrong = [hex(c) for c in range(sys.maxunicode + 1)
             if (not_blank.fullmatch(chr(c)) is None) != chr(c).isspace()]
    assert wrong == []


QUERIES = [
    ({"collectionId": "c", "fields": ["a", "b"], "limit": 200, "knownAt": "2024-02-28"}, True),
    ({"collectionId": "c", "aggregate": {"functions": [{"op": "count"}]}}, True),
    ({"collectionId": "c", "fields": ["a"], "sort": {"field": "a", "direction": "desc"},
      "filters": [{"field": "a", "op": "exists", "value": True}]}, True),
    ({"collectionId": "c"}, False),
    ({"collectionId": "c", "fields": []}, False),
    ({"collectionId": "", "fields": ["a"]}, False),
    ({"collectionId": "c", "fields": ["a", "a"]}, False),
    ({"collectionId": "c", "fields": ["a"], "limit": 0}, False),
    ({"collectionId": "c", "fields": ["a"], "filters": [{"field": "a", "op": "like"}]}, False),
    ({"collectionId": "c", "aggregate": {"functions": [{"op": "sum"}]}}, False),
    ({"collectionId": "c", "aggregate": {"functions": []}}, False),
    ({"collectionId": "c", "fields": ["a"], "knownAt": "0000-01-01"}, False),
]


@pytest.mark.parametrize(("body", "valid"), QUERIES)
def test_a_documented_field_query_passes_the_field_rules(body: dict[str, Any],
                                                         valid: bool) -> None:
    assert accepted(QueryFieldsRequest, body) is valid
    request = msgspec.convert(body, fields_shapes.FieldsQueryRequest)
    if valid:
        fields_shapes.check_query(request, NOW)
    else:
        with pytest.raises(ApiError):
            fields_shapes.check_query(request, NOW)


def _draft(body: dict[str, Any]) -> TemplateDraft:
    return TemplateDraft(
        description=body["description"], sql=body["sql"],
        parameters=tuple(Parameter(name=p["name"], type=p["type"],
                                   required=p.get("required", False), default=p.get("default"))
                         for p in body.get("parameters", ())),
        max_rows=body.get("maxRows", 100), timeout_ms=body.get("timeoutMs", 5000))


TEMPLATE = {"id": "by-region", "description": "Totals", "sql": "select 1"}
TEMPLATES = [
    ({}, True),
    ({"parameters": [{"name": "r", "type": "timestamp", "default": "2024-01-02T03:04:05+01:00"},
                     {"name": "n", "type": "integer", "required": True}],
      "maxRows": 1000, "timeoutMs": 100}, True),
    ({"id": "By-Region"}, False),
    ({"description": "\x1d\u3000"}, False),
    ({"sql": " \n"}, False),
    ({"parameters": [{"name": "r", "type": "json"}]}, False),
    ({"parameters": [{"name": "r", "type": "integer", "required": True, "default": 1}]}, False),
    ({"parameters": [{"name": "r", "type": "date", "default": "2024-02-32"}]}, False),
    ({"parameters": [{"name": "Bad", "type": "text"}]}, False),
    ({"maxRows": 0}, False),
    ({"timeoutMs": 10001}, False),
]


@pytest.mark.parametrize(("change", "valid"), TEMPLATES)
def test_a_documented_template_passes_request_validation(change: dict[str, Any],
                                                         valid: bool) -> None:
    body = {**TEMPLATE, **change}
    assert accepted(QueryTemplateRequest, body) is valid
    if valid:
        validate_request(body["id"], _draft(body))
    else:
        with pytest.raises(QueryTemplateInvalidError):
            validate_request(body["id"], _draft(body))

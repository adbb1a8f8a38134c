"""The query contract documents the bounds the route and the domain enforce (it imports nothing
of the service, so it repeats them)."""

from __future__ import annotations

import msgspec

from context_service.contract import query
from context_service.domain.context import index_upload
from context_service.http import index_body


def test_the_documented_number_of_parts_is_the_domains() -> None:
    assert query.MAX_PARTS == index_upload.MAX_PARTS


def test_the_documented_upload_id_is_the_one_the_route_checks() -> None:
    _, components = msgspec.json.schema_components([query.PublishQueryIndexRequest])
    documented = components["PublishQueryIndexRequest"]["properties"]["uploadId"]
    assert documented["anyOf"][0]["pattern"] == f"^{index_body.UPLOAD_ID.pattern}$"

"""The agent's times as its client checks them against the tool and route schemas: every day of
the calendar and every year a request may name, so that an agent framework that validates tool
arguments does not refuse what the service accepts (a pattern capped at the 28th and at 2025
refused this year's dates and month ends). What no pattern can state (a date that does not
exist, a systemTime later than the request) stays the service's to refuse."""

from __future__ import annotations

from datetime import UTC, datetime

import jsonschema
import pytest

from context_service.contract import agent as c
from context_service.contract import tools
from context_service.http.agent.errors import ApiError
from context_service.http.agent.packs_shapes import check_pack

PACK = tools.input_schema("context_pack")
FIELDS = tools.input_schema("query_fields")


@pytest.mark.parametrize("stamp", ["2026-01-31T00:00:00Z", "2024-02-29T12:30:00.5Z",
                                   "2025-07-30T23:59:59Z", "1999-12-31T00:00:00Z"])
def test_a_pack_s_as_of_takes_every_calendar_day_and_this_year(stamp: str) -> None:
    assert PACK is not None
    jsonschema.validate({"task": "t", "asOf": {"validTime": stamp, "systemTime": stamp}}, PACK)


@pytest.mark.parametrize("stamp", ["2026-13-01T00:00:00Z", "2026-01-32T00:00:00Z",
                                   "2026-01-01T24:00:00Z", "2026-01-01T00:00:00"])
def test_what_is_no_time_is_still_refused_by_the_schema(stamp: str) -> None:
    assert PACK is not None
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"task": "t", "asOf": {"validTime": stamp}}, PACK)


def test_a_fields_plan_takes_this_year_s_last_day() -> None:
    assert FIELDS is not None
    properties = FIELDS["properties"]
    plan = next(p for p in properties.values() if "knownAt" in p.get("properties", {})) \
        if "knownAt" not in properties else FIELDS
    known_at = plan["properties"]["knownAt"]
    jsonschema.validate("2026-12-31", known_at)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate("2026-12-32", known_at)


def test_the_service_refuses_what_the_schema_cannot_state() -> None:
    started = datetime(2026, 12, 6, 12, tzinfo=UTC)
    for as_of, where in ((c.AsOf(system_time="2027-01-01T00:00:00Z"), "$.asOf.systemTime"),
                         (c.AsOf(valid_time="2026-02-30T00:00:00Z"), "$.asOf.validTime")):
        with pytest.raises(ApiError) as refused:
            check_pack(c.PackRequest(task="t", as_of=as_of), started)
        assert (refused.value.status, refused.value.code) == (400, "VALIDATION_ERROR")
        assert where in str(refused.value.details), where

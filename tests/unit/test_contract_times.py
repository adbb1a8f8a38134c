"""The contract's time and date schemas against the rules of the routes that read the values: a
client, or an agent framework validating tool arguments, that checks a value against the schema
must not refuse what the route accepts (the patterns took only days 01-28, years 1900-2099 and
``Z``), nor admit what the route's pattern-stated rule refuses. What no pattern states (a date
that does not exist, an instant an offset moves out of years 1-9999) is admitted by the schema
and is the route's documented 400.

Each value is fed to the schema (a JSON Schema validator) and to the route's own parser."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import jsonschema
import msgspec
import pytest

from context_service.contract import agent, contexts, query, tools
from context_service.contract.query_templates import FORMS
from context_service.contract.values import TIMESTAMP
from context_service.domain.query_template.validation import is_form
from context_service.domain.values import parse_timestamp
from context_service.http.agent.errors import ApiError
from context_service.http.agent.fields_shapes import check_query
from context_service.http.agent.packs_shapes import check_pack

# after every time and date below: no systemTime or knownAt is later than the request
FAR = datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)

# request times (spec 1.1.2): the edges of the calendar, the zone and the fraction
TIMES_ACCEPTED = [
    "2026-01-31T00:00:00Z", "2024-02-29T12:30:00Z", "2026-12-31T23:59:59Z",
    "2026-03-31T10:00:00+05:30", "2026-12-31T23:59:59-00:00", "2026-05-31T00:00:00+23:59",
    "2026-07-31T00:00:00-23:59", "2026-06-30T00:00:00.123456Z", "2026-08-31T00:00:00.1234567Z",
    "2026-10-31t12:00:00z", "0001-01-01T00:00:00Z", "9999-12-31T23:59:59Z",
    "1899-12-31T00:00:00Z", "2100-01-31T00:00:00Z", "0042-01-31T00:00:00Z",
    "2026-01-01T00:00:00." + "1" * 43 + "Z", "2026-01-01T00:00:00." + "1" * 38 + "+01:00",
]
TIMES_REFUSED = [
    "2026-01-32T00:00:00Z", "2026-13-01T00:00:00Z", "2026-00-01T00:00:00Z",
    "2026-01-00T00:00:00Z", "0000-01-01T00:00:00Z", "2026-01-01T24:00:00Z",
    "2026-01-01T23:60:00Z", "2026-01-01T23:59:60Z", "2026-01-01T00:00:00+24:00",
    "2026-01-01T00:00:00+05:60", "2026-01-01T00:00:00+0530", "2026-01-01T00:00:00",
    "2026-01-01 00:00:00Z", "2026-01-01T00:00:00.Z", "2026-1-01T00:00:00Z",
    "\u0662\u0660\u0662\u0666-01-01T00:00:00Z", "2026-01-01T00:00:00z+01:00",
    "2026-01-01T00:00:00." + "1" * 44 + "Z", "2026-01-01T00:00:00." + "1" * 39 + "+01:00",
]
# what no pattern states: admitted by the schema, refused by the route (400)
TIMES_NOT_IN_THE_CALENDAR = [
    "2025-02-29T00:00:00Z", "2026-02-30T00:00:00Z", "2026-04-31T00:00:00Z",
    "2026-11-31T00:00:00+05:30", "0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-01:00",
]

# a template parameter's timestamp default (spec 11.4): any offset the parser reads, a space for
# the T, any number of fraction digits, instants an offset moves out of years 1-9999
TEMPLATE_TIMES_ACCEPTED = [
    "2026-01-31T00:00:00Z", "2024-02-29T00:00:00Z", "2026-12-31T23:59:59.5+05:30",
    "2026-03-31t00:00:00z", "2026-05-31 10:00:00-00:00", "2026-08-31T00:00:00+23:59",
    "2026-08-31T00:00:00." + "9" * 100 + "-13:30", "0001-01-01T00:00:00+01:00",
    "9999-12-31T23:59:59-23:59", "1850-10-31T00:00:00Z",
]
TEMPLATE_TIMES_REFUSED = [
    "2026-01-32T00:00:00Z", "0000-01-01T00:00:00Z", "2026-01-01T24:00:00Z",
    "2026-01-01T00:00:00+24:00", "2026-01-01T00:00:00+0530", "2026-01-01T00:00:00",
    "2026-01-01_00:00:00Z", "2026-01-01T00:00:00.Z", "2026-13-01T00:00:00Z",
    "2026-01-01T00:00:00+05:60", "2026-01-01T00:00:00-00:99",
]
DATES_ACCEPTED = ["2026-01-31", "2024-02-29", "2026-12-31", "0001-01-01", "9999-12-31",
                  "1850-03-31"]
DATES_REFUSED = ["0000-01-01", "2026-1-01", "2026-01-32", "2026-13-01", "2026-00-10",
                 "2026-01-31T00:00:00Z", "\u0662\u0660\u0662\u0666-01-01"]
DATES_NOT_IN_THE_CALENDAR = ["2025-02-29", "2026-02-30", "2026-06-31"]


def admits(schema: dict[str, Any], value: Any) -> bool:
    return jsonschema.Draft202012Validator(schema).is_valid(value)


def _property(struct: Any, name: str) -> dict[str, Any]:
    _, components = msgspec.json.schema_components([struct])
    found: dict[str, Any] = components[struct.__name__]["properties"][name]
    return found


# every request time of the contract: the /v1 bodies and the agent's asOf
TIME_FIELDS = [(contexts.PublishRevisionRequest, "createdAt"),
               (contexts.SetGrantRequest, "createdAt"),
               (contexts.AttachConsumerRequest, "since"),
               (contexts.DetachConsumerRequest, "since"),
               (query.IndexRecordRequest, "validFrom"), (query.IndexRecordRequest, "validTo"),
               (agent.AsOf, "validTime"), (agent.AsOf, "systemTime")]


@pytest.mark.parametrize("value", TIMES_ACCEPTED + TIMES_REFUSED)
def test_the_timestamp_rule_admits_exactly_what_the_routes_parse(value: str) -> None:
    assert admits(TIMESTAMP, value) == (parse_timestamp(value) is not None)


@pytest.mark.parametrize(("struct", "name"), TIME_FIELDS)
def test_every_request_time_of_the_contract_is_the_timestamp_rule(struct: Any, name: str) -> None:
    schema = _property(struct, name)
    assert [v for v in TIMES_ACCEPTED if not admits(schema, v)] == []
    assert [v for v in TIMES_REFUSED if admits(schema, v)] == []


@pytest.mark.parametrize("value", TIMES_NOT_IN_THE_CALENDAR)
def test_a_time_no_pattern_states_is_the_route_s_to_refuse(value: str) -> None:
    assert admits(TIMESTAMP, value)
    assert parse_timestamp(value) is None


def _pack_refuses(as_of: agent.AsOf) -> list[str]:
    try:
        check_pack(agent.PackRequest(task="t", as_of=as_of), FAR)
    except ApiError as refused:
        assert refused.status == 400
        return [str(d) for d in refused.details or ()]
    return []


@pytest.mark.parametrize("value", TIMES_ACCEPTED + TIMES_REFUSED)
def test_a_pack_tool_s_times_admit_exactly_what_the_pack_route_accepts(value: str) -> None:
    schema = tools.input_schema("context_pack")
    assert schema is not None
    for key, as_of in (("validTime", agent.AsOf(valid_time=value)),
                       ("systemTime", agent.AsOf(system_time=value))):
        admitted = admits(schema, {"task": "t", "asOf": {key: value}})
        assert admitted == (_pack_refuses(as_of) == []), key


@pytest.mark.parametrize("value", TEMPLATE_TIMES_ACCEPTED + TEMPLATE_TIMES_REFUSED)
def test_a_template_timestamp_default_is_admitted_exactly_when_the_parser_reads_it(
        value: str) -> None:
    assert admits(FORMS["timestamp"], value) == is_form("timestamp", value)


@pytest.mark.parametrize("value", DATES_ACCEPTED + DATES_REFUSED)
def test_a_template_date_default_is_admitted_exactly_when_the_parser_reads_it(value: str) -> None:
    assert admits(FORMS["date"], value) == is_form("date", value)


def _fields_refuse(known_at: str) -> bool:
    try:
        check_query(agent.QueryFieldsRequest(collection_id="c", fields=["f"], known_at=known_at),
                    FAR)
    except ApiError as refused:
        assert "$.knownAt" in str(refused.details)
        return True
    return False


@pytest.mark.parametrize("value", DATES_ACCEPTED + DATES_REFUSED)
def test_a_fields_plan_s_known_at_admits_exactly_what_the_route_accepts(value: str) -> None:
    schema = _property(agent.QueryFieldsRequest, "knownAt")
    assert admits(schema, value) == (not _fields_refuse(value))


@pytest.mark.parametrize("value", DATES_NOT_IN_THE_CALENDAR)
def test_a_date_no_pattern_states_is_the_parser_s_to_refuse(value: str) -> None:
    assert admits(FORMS["date"], value) and not is_form("date", value)
    assert admits(_property(agent.QueryFieldsRequest, "knownAt"), value)
    assert _fields_refuse(value)
    stamp = value + "T00:00:00Z"
    assert admits(FORMS["timestamp"], stamp) and not is_form("timestamp", stamp)


def test_a_known_at_later_than_today_is_the_route_s_to_refuse() -> None:
    today = datetime(2026, 12, 6, 12, tzinfo=UTC)
    assert admits(_property(agent.QueryFieldsRequest, "knownAt"), "2999-01-01")
    with pytest.raises(ApiError) as refused:
        check_query(agent.QueryFieldsRequest(collection_id="c", fields=["f"],
                                             known_at="2999-01-01"), today)
    assert "must not be later than today (UTC)" in str(refused.value.details)

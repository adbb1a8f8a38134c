"""The extended query record through HTTP (agent api 5.1): every new check at and past its edge,
in its order after checks 1-4, with its exact message; the record documents of the query route
in the spec's key order, the new fields omitted when empty."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.api.conftest import Api, each
from tests.api.namespaced import Namespaced, namespaced
from tests.api.test_query import create, digest, invalid, publish_revision, put_index

# one service for the module: every test's context lives in a namespace of its own
pytestmark = [pytest.mark.postgres, pytest.mark.shared_service]
NAME = "facts"
REV = digest(NAME)


@pytest.fixture
def api(api: Api) -> Namespaced:
    """The module's client over a namespace of the test's own."""
    return namespaced(api)


@pytest.fixture
def facts(api: Namespaced) -> str:
    create(api, NAME, "knowledge")
    publish_revision(api, NAME, REV)
    return NAME


def rec(id_: str = "r1", text: str = "Dana Reyes is the CFO", **extra: Any) -> dict[str, Any]:
    return {"id": id_, "context": NAME, "type": "knowledge", "revision": REV, "text": text,
            **extra}


def put(api: Namespaced, *records: dict[str, Any]) -> Any:
    return put_index(api, NAME, {"revision": REV, "records": list(records)})


def refused(api: Namespaced, detail: str, *records: dict[str, Any]) -> None:
    response = put(api, *records)
    assert response.status_code == 400, response.text
    assert response.json() == invalid(detail)


def accepted(api: Namespaced, *records: dict[str, Any]) -> None:
    response = put(api, *records)
    assert response.status_code == 204, response.text


def query(api: Namespaced, **body: Any) -> Any:
    response = api.post(f"/v1/namespaces/{api.ns}/query", {"contexts": [NAME], **body})
    assert response.status_code == 200, response.text
    return response


VALIDITY = "query record validTo must be after validFrom"
SUPERSEDES = "query record supersedes must list other record ids"
FACT_KEY = "query record factKey must be 1 to 200 characters"
NAMES = ("query record fields need distinct names matching ^[a-z][a-z0-9_]{0,62}$"
         " (at most 50)")


def field(name: str = "amount", type_: str = "number", value: Any = 5,
          span: dict[str, Any] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "type": type_, "value": value}
    if span is not None:
        out["span"] = span
    return out


def test_a_fully_extended_record_reads_back_in_key_order(api: Namespaced, facts: str) -> None:
    sent = rec(title="CFO", keywords=["cfo"], source={"context": "hr", "type": "knowledge",
                                                      "revision": "x"},
               file="people.md", validFrom="2026-02-01T01:00:00+01:00",
               validTo="2027-01-01T00:00:00.120Z", supersedes=["r0"], factKey="officer/cfo",
               fields=[field("holder", "text", "Dana Reyes", {"start": 0, "end": 10}),
                       field("pay", "money", {"currency": "USD", "amount": "-12.50"}),
                       field("since", "date", "2026-02-01"), field("interim", "boolean", False),
                       field("ratio", "number", 0.25)])
    accepted(api, sent)
    raw = query(api, query="cfo").content
    expected = {"id": "r1", "context": NAME, "type": "knowledge", "revision": REV,
                "title": "CFO", "text": "Dana Reyes is the CFO", "keywords": ["cfo"],
                "source": {"context": "hr", "type": "knowledge", "revision": "x"},
                "file": "people.md", "validFrom": "2026-02-01T00:00:00Z",
                "validTo": "2027-01-01T00:00:00.12Z", "supersedes": ["r0"],
                "factKey": "officer/cfo", "fields": [
                    field("holder", "text", "Dana Reyes", {"start": 0, "end": 10}),
                    field("pay", "money", {"amount": "-12.50", "currency": "USD"}),
                    field("since", "date", "2026-02-01"), field("interim", "boolean", False),
                    field("ratio", "number", 0.25)]}
    assert raw == json.dumps({"items": [{"score": 6, "record": expected}]},
                             separators=(",", ":")).encode()


def test_a_record_without_the_new_fields_reads_byte_for_byte_as_before(api: Namespaced,
                                                                        facts: str) -> None:
    accepted(api, rec(supersedes=[], fields=[], validFrom=None, factKey=None))
    raw = query(api, query="cfo").content
    assert raw == (
        '{"items":[{"score":1,"record":{"id":"r1","context":"facts","type":"knowledge",'
        f'"revision":"{REV}","text":"Dana Reyes is the CFO",'
        '"source":{"context":"","type":"","revision":""}}}]}').encode()


def test_validity_period(api: Namespaced, facts: str) -> None:
    refused(api, VALIDITY, rec(validFrom="2026-01-01T00:00:00Z", validTo="2026-01-01T00:00:00Z"))
    refused(api, VALIDITY, rec(validFrom="2026-01-01T01:00:00+01:00",
                               validTo="2026-01-01T00:00:00Z"))  # the same instant
    refused(api, VALIDITY, rec(validFrom="2026-01-02T00:00:00Z", validTo="2026-01-01T00:00:00Z"))
    accepted(api, rec(validFrom="2026-01-01T00:00:00Z", validTo="2026-01-01T00:00:00.000001Z"))
    accepted(api, rec(validFrom="2026-01-01T00:00:00Z"), rec("r2", validTo="2020-01-01T00:00:00Z"))


def test_a_malformed_timestamp_fails_decoding(api: Namespaced, facts: str) -> None:
    for value in ("2026-01-01", "2026-01-01T00:00:00", "yesterday", "2026-02-30T00:00:00Z"):
        response = put(api, rec(), rec("r2", validTo=value))
        assert response.status_code == 400, value
        assert response.json() == {"error": "invalid_request", "message":
                                   'validTo must be an RFC 3339 timestamp with a zone at'
                                   ' "$.records[1].validTo"'}
    response = put(api, rec(validFrom=5))
    assert response.status_code == 400 and "validFrom" in response.json()["message"]


def test_supersedes(api: Namespaced, facts: str) -> None:
    each([[""], ["r0", "r0"], ["r1"], ["r0", "r1"]],
         lambda ids: refused(api, SUPERSEDES, rec(supersedes=ids)))
    accepted(api, rec(supersedes=["r0", "r2", "not-in-the-index"]))


def test_fact_key(api: Namespaced, facts: str) -> None:
    each(["", " ", "\t\n", "k" * 201],
         lambda key: refused(api, FACT_KEY, rec(), rec("r2", factKey=key)))
    accepted(api, rec(factKey="k" * 200), rec("r2", factKey="é"))


def test_field_names_and_count(api: Namespaced, facts: str) -> None:
    bad_names = ["", "Amount", "1st", "_x", "a-b", "a" * 64, "ä"]
    each(bad_names, lambda name: refused(api, NAMES, rec(fields=[field(name)])))
    refused(api, NAMES, rec(fields=[field("a"), field("a")]))
    refused(api, NAMES, rec(fields=[field(f"f{i}") for i in range(51)]))
    accepted(api, rec(fields=[field(f"f{i}") for i in range(50)]),
             rec("r2", fields=[field("a" * 63), field("z9_")]))


def test_field_types_and_values(api: Namespaced, facts: str) -> None:
    def unsupported(type_: Any) -> None:
        refused(api, 'field "x" has an unsupported type', rec(fields=[field("x", type_)]))
    each(["", "Number", "string", "int", None], unsupported)

    mismatches = [
        ("number", True), ("number", "5"), ("number", None), ("number", [1]),
        ("number", 10 ** 400),
        ("money", {"amount": "1", "currency": "usd"}),
        ("money", {"amount": 1, "currency": "USD"}),
        ("money", {"amount": "1.", "currency": "USD"}),
        ("money", {"amount": "+1", "currency": "USD"}),
        ("money", {"amount": "1" * 21, "currency": "USD"}),
        ("money", {"amount": "1." + "0" * 19, "currency": "USD"}),
        ("money", {"amount": "1", "currency": "USDX"}),
        ("money", {"amount": "1", "currency": "USD", "extra": 1}), ("money", {"amount": "1"}),
        ("money", "1 USD"),
        ("date", "2026-02-30"), ("date", "2026-2-1"), ("date", "0000-01-01"),
        ("date", "2026-02-01T00:00:00Z"), ("date", 20260201),
        ("boolean", "true"), ("boolean", 1), ("boolean", None),
        ("text", 5), ("text", "x" * 1001), ("text", None)]

    def mismatch(case: tuple[str, Any]) -> None:
        type_, value = case
        refused(api, 'field "x" has a value that does not match its type',
                rec(fields=[field("x", type_, value)]))
    each(mismatches, mismatch)
    accepted(api, rec(fields=[
        field("a", "number", -1.5e300), field("b", "number", 2 ** 70),
        field("c", "money", {"amount": "-" + "9" * 20 + "." + "9" * 18, "currency": "EUR"}),
        field("d", "date", "2024-02-29"), field("e", "boolean", True),
        field("f", "text", "x" * 1000), field("g", "text", "")]))


def test_field_spans(api: Namespaced, facts: str) -> None:
    text = "héllo wörld"  # 11 code points, more bytes
    outside = 'field "x" has a span outside the record text'
    for span in ({"start": -1, "end": 2}, {"start": 3, "end": 3}, {"start": 4, "end": 3},
                 {"start": 0, "end": 12}, {"start": 0}, {"end": 2}):
        refused(api, outside, rec(text=text, fields=[field("x", span=span)]))
    accepted(api, rec(text=text, fields=[field("x", span={"start": 0, "end": 11}),
                                         field("y", span={"start": 10, "end": 11})]))


def test_one_type_per_field_name_across_the_index(api: Namespaced, facts: str) -> None:
    refused(api, 'field "amount" has more than one type in this index',
            rec(fields=[field("amount")]),
            rec("r2", fields=[field("amount", "money", {"amount": "1", "currency": "USD"})]))
    accepted(api, rec(fields=[field("amount")]), rec("r2", fields=[field("amount", value=7)]))


def test_checks_run_in_order_over_the_whole_index(api: Namespaced, facts: str) -> None:
    bad = {
        3: rec("r3", text=" "),
        4: rec("r4", context="other"),
        5: rec("r5", validFrom="2026-01-02T00:00:00Z", validTo="2026-01-01T00:00:00Z"),
        6: rec("r6", supersedes=["r6"]),
        7: rec("r7", factKey=" "),
        8: rec("r8", fields=[field("X")]),
        81: rec("r81", fields=[field("t", "nope")]),
        82: rec("r82", fields=[field("v", "boolean", 1)]),
        83: rec("r83", fields=[field("s", span={"start": 0, "end": 999})]),
        9: rec("r9", fields=[field("n", "text", "a")]),
        10: rec("r10", fields=[field("n")]),
    }
    messages = {3: "query records require id and text",
                4: "query record identity does not match its context",
                5: VALIDITY, 6: SUPERSEDES, 7: FACT_KEY, 8: NAMES,
                81: 'field "t" has an unsupported type',
                82: 'field "v" has a value that does not match its type',
                83: 'field "s" has a span outside the record text',
                9: 'field "n" has more than one type in this index'}
    order = list(bad)[:-1]
    for i, check in enumerate(order):
        # the later offenders come first in the body: the earlier check still wins
        records = [bad[c] for c in reversed([*order[i:], 10])]
        refused(api, messages[check], *records)
    # the context type and revision checks come before every record check
    response = put_index(api, NAME, {"revision": "0" * 64, "records": [bad[5]]})
    assert response.json() == invalid(
        "query index revision must match the current context revision")


def test_unknown_keys_in_extended_shapes_fail_decoding(api: Namespaced, facts: str) -> None:
    for record in (rec(fields=[{**field(), "unit": "kg"}]),
                   rec(fields=[field(span={"start": 0, "end": 1, "len": 1})]),
                   rec(valid_from="2026-01-01T00:00:00Z"),
                   rec(fields=[field(span={"start": 0.0, "end": 1})]),
                   rec(supersedes="r0"), rec(factKey=5)):
        response = put(api, record)
        assert response.status_code == 400, record
        assert response.json()["error"] == "invalid_request"
        assert not response.json()["message"].startswith("invalid context resource")


def test_history_shows_the_new_fields_as_stored_and_leaves_out_empty_ones(api: Namespaced,
                                                                          facts: str) -> None:
    accepted(api, rec(validFrom="2026-02-01T00:00:00Z", factKey="officer/cfo",
                      fields=[field("holder", "text", "Dana", {"start": 0, "end": 4})]),
             rec("r2"))
    items = api.get(f"{api.contexts}/{NAME}/history").json()["items"]
    data = items[-1]["data"]
    assert items[-1]["name"] == "QueryIndexPublished"
    assert list(data) == ["revision", "records"]  # upload_id and parts left out when empty
    source = {"context": "", "type": "", "revision": ""}
    assert data["records"] == [
        {"id": "r1", "context": NAME, "type": "knowledge", "revision": REV,
         "text": "Dana Reyes is the CFO", "title": "", "keywords": [], "source": source,
         "file": "", "valid_from": "2026-02-01T00:00:00Z", "fact_key": "officer/cfo",
         "fields": [{"name": "holder", "type": "text", "value": "Dana",
                     "span": {"start": 0, "end": 4}}]},
        {"id": "r2", "context": NAME, "type": "knowledge", "revision": REV,
         "text": "Dana Reyes is the CFO", "title": "", "keywords": [], "source": source,
         "file": ""}]

"""Multi-part index uploads through HTTP (docs/query-index-uploads.md): request checks, the
index becoming current with its last part only, replacement by a newer upload, re-sent parts,
checks spanning parts, the event size limits, and a 20,000-record index."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from tests.api.conftest import Api, each
from tests.api.namespaced import Namespaced, namespaced
from tests.api.test_query import create, digest, invalid, publish_revision, put_index

# one service for the module: every test's context lives in a namespace of its own
pytestmark = [pytest.mark.postgres, pytest.mark.shared_service]
NAME = "library"
REV = digest(NAME)


@pytest.fixture
def api(api: Api) -> Namespaced:
    """The module's client over a namespace of the test's own."""
    return namespaced(api)


def history(api: Namespaced) -> str:
    return f"{api.contexts}/{NAME}/history"


@pytest.fixture
def library(api: Namespaced) -> str:
    create(api, NAME, "knowledge")
    publish_revision(api, NAME, REV)
    return NAME


def rec(id_: str, text: str = "shared words", **extra: Any) -> dict[str, Any]:
    return {"id": id_, "context": NAME, "type": "knowledge", "revision": REV, "text": text,
            **extra}


def part(api: Namespaced, upload: str, number: int, parts: int, records: list[dict[str, Any]],
         revision: str = REV) -> Any:
    return put_index(api, NAME, {"revision": revision, "records": records, "uploadId": upload,
                                 "part": number, "parts": parts})


def ok(response: Any) -> None:
    assert response.status_code == 204, response.text


def ids(api: Namespaced, query: str = "shared") -> list[str]:
    found: list[str] = []
    cursor = None
    while True:
        body: dict[str, Any] = {"contexts": [NAME], "query": query, "limit": 100}
        if cursor:
            body["cursor"] = cursor
        page = api.post(f"/v1/namespaces/{api.ns}/query", body).json()
        found += [item["record"]["id"] for item in page["items"]]
        cursor = page.get("nextCursor")
        if not cursor:
            return sorted(found)


def unavailable(api: Namespaced) -> list[str]:
    page = api.post(f"/v1/namespaces/{api.ns}/query", {"contexts": [NAME], "query": "x"}).json()
    return list(page.get("unavailable", []))


def names(api: Namespaced) -> list[str]:
    return [item["name"] for item in api.get(history(api)).json()["items"]]


def test_request_checks_of_the_upload_fields(api: Namespaced, library: str) -> None:
    def bad(case: tuple[dict[str, Any], str]) -> None:
        extra, message = case
        response = put_index(api, NAME, {"revision": REV, "records": [], **extra})
        assert response.status_code == 400, response.text
        assert response.json() == {"error": "invalid_request", "message": message}
    together = "uploadId, part and parts are required together"
    pattern = "uploadId must match ^[A-Za-z0-9._-]{1,64}$"
    each([({"uploadId": "u"}, together), ({"part": 1, "parts": 1}, together),
          ({"uploadId": "u", "parts": 2}, together),
          ({"uploadId": "", "part": 1, "parts": 1}, pattern),
          ({"uploadId": "a" * 65, "part": 1, "parts": 1}, pattern),
          ({"uploadId": "a b", "part": 1, "parts": 1}, pattern),
          ({"uploadId": "~body", "part": 1, "parts": 1}, pattern),
          ({"uploadId": "u", "part": 1, "parts": 0}, "parts must be between 1 and 10000"),
          ({"uploadId": "u", "part": 1, "parts": 10001}, "parts must be between 1 and 10000"),
          ({"uploadId": "u", "part": 0, "parts": 3}, "part must be between 1 and parts"),
          ({"uploadId": "u", "part": 4, "parts": 3}, "part must be between 1 and parts")], bad)
    for extra in ({"uploadId": "u", "part": "1", "parts": 2},
                  {"uploadId": "u", "part": 1, "parts": 2.0}, {"uploadId": 7, "part": 1,
                                                               "parts": 2}):
        response = put_index(api, NAME, {"revision": REV, "records": [], **extra})
        assert response.status_code == 400, extra
    ok(part(api, "A-z0.9_" + "x" * 57, 1, 10000, []))
    # nulls are absent keys: a plain single-body publish
    ok(put_index(api, NAME, {"revision": REV, "records": [rec("s")], "uploadId": None,
                             "part": None, "parts": None}))


def test_an_index_becomes_current_with_its_last_part_only(api: Namespaced, library: str) -> None:
    ok(put_index(api, NAME, {"revision": REV, "records": [rec("old")]}))
    before = names(api)
    ok(part(api, "u1", 3, 3, [rec("c1"), rec("c2")]))
    ok(part(api, "u1", 1, 3, [rec("a1")]))
    assert ids(api) == ["old"]  # a missing part keeps the old index current
    assert names(api) == [*before, "QueryIndexPartStaged", "QueryIndexPartStaged"]
    ok(part(api, "u1", 2, 3, [rec("b1"), rec("b2")]))
    assert ids(api) == ["a1", "b1", "b2", "c1", "c2"]
    assert names(api)[-2:] == ["QueryIndexPartStaged", "QueryIndexPublished"]
    published = api.get(history(api)).json()["items"][-1]
    assert published["data"] == {"revision": REV, "records": [], "upload_id": "u1", "parts": 3}
    # publish order is part order: duplicates of an id keep the first (part 1 before part 2)
    ok(part(api, "u2", 2, 2, [rec("dup", "shared second")]))
    ok(part(api, "u2", 1, 2, [rec("dup", "shared first")]))
    page = api.post(f"/v1/namespaces/{api.ns}/query", {"contexts": [NAME], "ids": ["dup"]}).json()
    assert [i["record"]["text"] for i in page["items"]] == ["shared first", "shared second"]


def test_a_resent_part_replaces_the_one_before(api: Namespaced, library: str) -> None:
    ok(part(api, "u", 1, 2, [rec("first-try")]))
    ok(part(api, "u", 1, 2, [rec("second-try")]))
    ok(part(api, "u", 2, 2, [rec("two")]))
    assert ids(api) == ["second-try", "two"]
    # the last part sent again after completion (a lost answer) changes nothing
    head = len(names(api))
    ok(part(api, "u", 2, 2, [rec("two")]))
    assert len(names(api)) == head
    assert ids(api) == ["second-try", "two"]


def test_a_newer_upload_replaces_an_older_incomplete_one(api: Namespaced, library: str) -> None:
    ok(part(api, "old", 1, 2, [rec("o1")]))
    ok(part(api, "new", 1, 2, [rec("n1")]))
    response = part(api, "old", 2, 2, [rec("o2")])
    assert response.status_code == 400
    assert response.json() == invalid('query index upload "old" was replaced by a newer upload')
    assert unavailable(api) == [NAME]  # nothing published yet
    ok(part(api, "new", 2, 2, [rec("n2")]))
    assert ids(api) == ["n1", "n2"]
    # a single body replaces an open upload too
    ok(part(api, "third", 1, 2, [rec("t1")]))
    ok(put_index(api, NAME, {"revision": REV, "records": [rec("whole")]}))
    assert ids(api) == ["whole"]
    response = part(api, "third", 2, 2, [rec("t2")])
    assert response.json() == invalid('query index upload "third" was replaced by a newer upload')


def test_parts_must_agree_and_follow_the_current_revision(api: Namespaced, library: str) -> None:
    ok(part(api, "u", 1, 3, [rec("a")]))
    response = part(api, "u", 2, 4, [rec("b")])
    assert response.status_code == 400
    assert response.json() == invalid('query index upload "u" has 3 parts, not 4')
    newer = digest("newer")
    publish_revision(api, NAME, newer)
    response = part(api, "u", 2, 3, [rec("b")])
    assert response.json() == invalid(
        "query index revision must match the current context revision")
    # the new revision starts afresh: the same upload id is a new upload
    ok(part(api, "u", 1, 1, [{**rec("fresh"), "revision": newer}], revision=newer))
    assert ids(api) == ["fresh"]


def test_record_checks_span_the_parts_of_an_upload(api: Namespaced, library: str) -> None:
    ok(part(api, "u", 1, 2, [rec("a", fields=[{"name": "amount", "type": "number",
                                               "value": 1}])]))
    money = {"name": "amount", "type": "money", "value": {"amount": "1", "currency": "USD"}}
    response = part(api, "u", 2, 2, [rec("b", fields=[money])])
    assert response.json() == invalid('field "amount" has more than one type in this index')
    response = part(api, "u", 2, 2, [{**rec("b"), "context": "other"}])
    assert response.json() == invalid("query record identity does not match its context")
    ok(part(api, "u", 2, 2, [rec("b", fields=[{"name": "amount", "type": "number",
                                               "value": 2.5}])]))
    assert ids(api) == ["a", "b"]


def test_every_event_stays_below_the_bus_limit(api: Namespaced, library: str) -> None:
    # a single body of about 1 MiB is stored as parts of at most 512 KiB plus the publication
    records = [rec(f"r{i}", "shared " + "w" * 900) for i in range(960)]
    body = json.dumps({"revision": REV, "records": records}).encode()
    assert 1000 * 1000 < len(body) <= 1024 * 1024 - 200
    ok(put_index(api, NAME, None, raw=body))
    events = api.get(history(api)).json()["items"]
    staged = [e for e in events if e["name"] == "QueryIndexPartStaged"]
    assert len(staged) >= 2 and events[-1]["name"] == "QueryIndexPublished"
    assert [e["data"]["part"] for e in staged] == list(range(1, len(staged) + 1))
    assert events[-1]["data"] == {"revision": REV, "records": [], "upload_id": "~body",
                                  "parts": len(staged)}
    assert len({e["position"] for e in events[-len(staged) - 1:]}) == len(staged) + 1
    assert all(len(json.dumps(e["data"], separators=(",", ":"), ensure_ascii=False))
               < 512 * 1024 + 4096 for e in staged)
    assert len(ids(api)) == 960
    # a client's part that would not fit one event is refused
    response = part(api, "u", 1, 1, records)
    assert response.json() == invalid(
        "query index part is too large to store (at most 983040 bytes encoded);"
        " send fewer records per part")
    # and so is a single record too large for any event
    response = put_index(api, NAME, {"revision": REV, "records": [
        rec("small"), rec("huge", "w" * 1_000_000)]})
    assert response.json() == invalid(
        'query record "huge" is too large to store (at most 983040 bytes encoded)')
    assert len(ids(api)) == 960


def test_twenty_thousand_records_in_parts(api: Namespaced, library: str) -> None:
    parts = 8
    per = 2500
    for number in range(1, parts + 1):
        records = [rec(f"p{number}-{i:04d}", f"record {number} {i} shared text",
                       title=f"t{number}") for i in range(per)]
        ok(part(api, "big", number, parts, records))
        if number < parts:
            assert unavailable(api) == [NAME]
    sample = [f"p{n}-{i:04d}" for n in range(1, parts + 1) for i in (0, 1234, per - 1)]
    # the worker computes the passages' features with the layout: a read may meet 503 first
    deadline = time.monotonic() + 120
    while True:
        answer = api.post(f"/v1/namespaces/{api.ns}/query", {"contexts": [NAME], "ids": sample,
                                                         "limit": 100})
        if answer.status_code != 503 or time.monotonic() > deadline:
            break
    assert answer.status_code == 200, answer.text
    page = answer.json()
    assert sorted(i["record"]["id"] for i in page["items"]) == sorted(sample)
    page = api.post(f"/v1/namespaces/{api.ns}/query", {"contexts": [NAME], "query": "t5 1234",
                                                   "limit": 3}).json()
    assert page["items"][0]["record"]["id"] == "p5-1234"
    assert page["items"][0]["score"] == 3 + 1

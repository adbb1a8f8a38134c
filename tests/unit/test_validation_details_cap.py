"""``VALIDATION_ERROR`` details are bounded (decision 0059): the first 100 violations in the
rules' order, then one entry counting the rest; a caller's key or name shown back is cut with an
ellipsis; collecting past the cap keeps nothing of the violations left out. Counts and
allocation ratios only, no clock."""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable
from datetime import UTC, datetime

import msgspec
import pytest

from context_service.contract.agent import PackRequest
from context_service.domain.echoed import ECHO, ELLIPSIS, cut
from context_service.domain.fields.plan import Plan, plan_violations
from context_service.http.agent.body import LONGEST, MAX_LISTED, Violations, decode
from context_service.http.agent.errors import ApiError, Violation
from context_service.http.agent.packs_shapes import check_pack
from context_service.http.agent.template_values import check_parameters

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def refused(check: Callable[[], object]) -> list[Violation]:
    with pytest.raises(ApiError) as caught:
        check()
    assert caught.value.code == "VALIDATION_ERROR"
    details: list[Violation] = caught.value.details
    return details


def collected(count: int) -> list[Violation]:
    v = Violations()
    for i in range(count):
        v.add(f"$.items[{i}]", "must not be empty")
    return refused(v.raise_if_any)


@pytest.mark.parametrize("count", [1, MAX_LISTED - 1, MAX_LISTED])
def test_up_to_the_cap_every_violation_is_listed(count: int) -> None:
    assert collected(count) == [Violation(f"$.items[{i}]", "must not be empty")
                                for i in range(count)]


@pytest.mark.parametrize(("count", "message"), [
    (MAX_LISTED + 1, "1 more violation not listed"),
    (MAX_LISTED + 2, "2 more violations not listed"),
    (250_000, f"{250_000 - MAX_LISTED} more violations not listed"),
])
def test_past_the_cap_the_last_entry_counts_the_rest(count: int, message: str) -> None:
    details = collected(count)
    assert len(details) == MAX_LISTED + 1
    assert details[:MAX_LISTED] == [Violation(f"$.items[{i}]", "must not be empty")
                                    for i in range(MAX_LISTED)]
    assert details[-1] == Violation("$", message)


def test_one_violation_per_path_also_past_the_cap() -> None:
    v = Violations()
    for i in range(MAX_LISTED):
        v.add(f"$.a[{i}]", "first rule")
        v.add(f"$.a[{i}]", "second rule")  # the same path: only its first rule
    v.add("$.a[0]", "again")  # listed already
    for i in range(5):
        v.add(f"$.b[{i}]", "first rule")
        v.add(f"$.b[{i}]", "second rule")  # past the cap, the path just counted
    details = refused(v.raise_if_any)
    assert {d.message for d in details[:-1]} == {"first rule"}
    assert details[-1] == Violation("$", "5 more violations not listed")


def test_long_paths_and_messages_are_cut() -> None:
    v = Violations()
    v.add("$.parameters." + "k" * 100_000, "unknown " + "x" * 100_000)
    (only,) = refused(v.raise_if_any)
    assert only.path == ("$.parameters." + "k" * 100_000)[:LONGEST] + ELLIPSIS
    assert only.message == ("unknown " + "x" * 100_000)[:LONGEST] + ELLIPSIS


def test_cut_keeps_what_fits_and_counts_code_points() -> None:
    assert cut("a" * ECHO) == "a" * ECHO
    assert cut("\U0001F600" * (ECHO + 1)) == "\U0001F600" * ECHO + ELLIPSIS


def _peak(build: Callable[[], object]) -> int:
    tracemalloc.start()
    try:
        build()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_collecting_keeps_nothing_of_the_violations_left_out() -> None:
    def adding(count: int) -> Callable[[], object]:
        def run() -> object:
            v = Violations()
            for i in range(count):
                v.add(f"$.filters.documentIds[{i}]", "must be <collectionId>/<file>")
            return refused(v.raise_if_any)
        return run

    few, many = _peak(adding(1_000)), _peak(adding(200_000))
    # every violation kept made 200 times the violations cost about 200 times the memory
    assert many < 2 * few, f"200,000 violations held {many} bytes, 1,000 held {few}"


def test_a_pack_body_of_invalid_ids_answers_the_cap() -> None:
    ids = ["x"] * 200_000
    raw = msgspec.json.encode({"task": "t", "filters": {"documentIds": ids}})
    details = refused(lambda: check_pack(decode(raw, PackRequest), NOW))
    assert len(details) == MAX_LISTED + 1
    assert details[0] == Violation("$.filters.documentIds", "must have at most 20 entries")
    assert details[1].path == "$.filters.documentIds[0]"
    # the entry on the list itself, then 200,000 entries; 100 of the 200,001 listed
    assert details[-1] == Violation("$", f"{200_001 - MAX_LISTED} more violations not listed")


def test_an_unknown_long_parameter_key_is_cut_in_its_path() -> None:
    key = "k" * 500_000
    (only,) = refused(lambda: check_parameters((), {key: 1}))
    assert only == Violation(("$.parameters." + key)[:LONGEST] + ELLIPSIS,
                             "is not a parameter of this template")


def test_parameters_of_many_unknown_keys_answer_the_cap() -> None:
    given = {f"p{i}": 1 for i in range(50_000)}
    details = refused(lambda: check_parameters((), given))
    assert [d.path for d in details[:3]] == ["$.parameters.p0", "$.parameters.p1",
                                              "$.parameters.p2"]
    assert details[-1] == Violation("$", f"{50_000 - MAX_LISTED} more violations not listed")


def test_an_unknown_long_field_name_is_cut_in_its_message() -> None:
    name = "a" * 300_000
    found = plan_violations(Plan(fields=(name, "b" * 10)), {"price": "money"})
    assert found == [("$.fields[0]", f'unknown field "{"a" * ECHO}{ELLIPSIS}"'),
                     ("$.fields[1]", f'unknown field "{"b" * 10}"')]


@pytest.mark.parametrize("key", ["k" * 500_000, "\x01" * 100_000, '"' * 100_000])
def test_an_unknown_long_body_key_is_cut_in_the_decoding_message(key: str) -> None:
    raw = msgspec.json.encode({"task": "t", "budget": {key: 1}})
    with pytest.raises(ApiError) as caught:
        decode(raw, PackRequest)
    assert caught.value.code == "INVALID_REQUEST"
    assert caught.value.message == f'unknown field "{key[:ECHO]}{ELLIPSIS}" at $.budget'

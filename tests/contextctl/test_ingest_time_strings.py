"""Times written as numbers inside strings, where Python's ISO 8601 reading would take them
first: it reads the first eight digits of a longer run as a date, any one character after them
as the separator and the rest as a time of day. Milliseconds of late November 2023 quoted by
an exporter ("1701011200000") were dated 12 January 1701 without a word."""

from __future__ import annotations

import json

import pytest

from context_service.contextctl.ingestion.decoding import Unreadable
from context_service.contextctl.ingestion.times import time_of


@pytest.mark.parametrize(("written", "read_as"), [
    ("1701011200000", "2023-11-26T15:06:40Z"),  # milliseconds: 1701-01-12 as ISO 8601
    ("1701011200123", "2023-11-26T15:06:40.123000Z"),
    ("1201010100000", "2008-01-22T13:55:00Z"),
    ("17010112000", "2509-01-11T07:06:40Z"),  # seconds, eleven digits
])
def test_a_number_whose_digits_open_like_a_date_is_read_as_the_number(written: str,
                                                                     read_as: str) -> None:
    assert time_of(json.loads(written), "message 1") == read_as  # the number itself
    assert time_of(written, "message 1") == read_as


def test_eight_digits_stay_iso_8601s_basic_date() -> None:
    assert time_of("20230508", "message 1") == "2023-05-08T00:00:00Z"
    assert time_of("2023-05-08T13:36:40Z", "message 1") == "2023-05-08T13:36:40Z"


@pytest.mark.parametrize("digits", [40, 5000])
def test_a_run_of_digits_no_date_can_hold_is_refused_not_read_as_a_date(digits: int) -> None:
    """Python read "1111...1" as 1111-11-11T11:11:11.111111: a number past year 9999."""
    with pytest.raises(Unreadable, match=r"^message 1: time .* is not a date and time$"):
        time_of("1" * digits, "message 1")

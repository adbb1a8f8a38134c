"""LoCoMo's session times (``1:56 pm on 8 May, 2023``) are read with English month names and
am/pm whatever the process's locale (a library that calls ``setlocale(LC_ALL, "")`` under a German
``LC_TIME`` must not refuse them), accepting exactly what ``strptime`` accepts in the C locale."""

from __future__ import annotations

import calendar
from collections.abc import Iterator
from datetime import datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from context_service.contextctl.ingestion import chat
from context_service.contextctl.ingestion.decoding import Unreadable

C_FORMAT = "%I:%M %p on %d %B, %Y"  # how the C locale reads them: the reference
GERMAN_MONTHS = ["", "Januar", "Februar", "März", "April", "Mai", "Juni", "Juli", "August",
                 "September", "Oktober", "November", "Dezember"]
GERMAN_ABBREVIATIONS = ["", "Jan", "Feb", "Mär", "Apr", "Mai", "Jun", "Jul", "Aug", "Sep",
                        "Okt", "Nov", "Dez"]


@pytest.fixture
def german_month_names(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The month names a German ``LC_TIME`` gives: ``strptime`` reads them from ``calendar``
    (``strftime("%B")`` of the locale) and reads them again when the locale's name changes."""
    import _strptime

    monkeypatch.setattr(calendar, "month_name", GERMAN_MONTHS)
    monkeypatch.setattr(calendar, "month_abbr", GERMAN_ABBREVIATIONS)
    monkeypatch.setattr(_strptime, "_getlang", lambda: ("de_DE", "UTF-8"))
    yield
    monkeypatch.undo()
    _strptime._regex_cache.clear()  # the next call reads the C locale's names again


def locomo(value: str) -> str | None:
    return chat._time(value, "conv-1 session_1")


@pytest.mark.usefixtures("german_month_names")
def test_a_locomo_time_is_read_under_a_german_locale() -> None:
    assert locomo("1:56 pm on 8 May, 2023") == "2023-05-08T13:56:00Z"
    assert locomo("10:05 am on 20 June, 2023") == "2023-06-20T10:05:00Z"


@pytest.mark.parametrize(("value", "expected"), [
    ("1:56 pm on 8 May, 2023", "2023-05-08T13:56:00Z"),
    ("12:00 am on 1 January, 2024", "2024-01-01T00:00:00Z"),
    ("12:30 PM on 31 December, 1999", "1999-12-31T12:30:00Z"),
    ("07:5 Am ON 08 september,\t2023", "2023-09-08T07:05:00Z"),
    ("9:15 pm  on  9 MARCH, 2022", "2022-03-09T21:15:00Z"),
])
def test_locomo_times_read_as_in_the_c_locale(value: str, expected: str) -> None:
    assert locomo(value) == expected


@pytest.mark.parametrize("value", [
    "13:00 pm on 8 May, 2023", "0:30 am on 8 May, 2023", "1:60 pm on 8 May, 2023",
    "1:56 on 8 May, 2023", "1:56 pm on 8 Mai, 2023", "1:56 pm on 8 May 2023",
    "1:56 pm on 31 April, 2023", "1:56 pm on 8 May, 23", "1:56 pm on 8 May, 2023 UTC",
    "1:56 pm at 8 May, 2023", "1:56pm on 8 May, 2023", "1:56 pm on 8 Ma, 2023",
])
def test_other_times_are_refused_as_in_the_c_locale(value: str) -> None:
    with pytest.raises(ValueError):
        datetime.strptime(value, C_FORMAT)
    with pytest.raises(Unreadable):
        locomo(value)


SPACES = ([" ", "  ", "\t", "\u00a0", " \n "], ["", "_"])
# each part of a LoCoMo time: forms the C locale takes, and forms it refuses
PARTS = [(["1", "01", "9", "12", "10"], ["13", "0", "00", " 1", "\u0661", "1 "]),
         ([":"], [".", ""]),
         (["56", "5", "05", "59", "0", "\u0665"], ["60", "\u0665\u0666", "5a"]), SPACES,
         (["am", "PM", "pM", "Am"], ["a.m.", "", "noon"]), SPACES,
         (["on", "ON", "oN"], ["at", "0n"]), SPACES,
         (["8", "08", " 8", "31", "30", "29", "1"], ["0", "32", "  8", "\u0668"]), SPACES,
         (["May", "may", "MAY", "June", "February", "september", "DECEMBER"],
          ["Feb", "Mai", "Sept", "Augu\u017ft", "Ma", "Mayy"]),
         ([","], ["", ";", " ,"]), SPACES,
         (["2023", "1999", "2024", "0001", "\u0662\u0660\u0662\u0663"],
          ["0000", "23", "20233", "2023 "])]


@st.composite
def locomo_times(draw: st.DrawFn) -> str:
    """A LoCoMo time with at most one part (often none) in a form the C locale refuses."""
    spoilt = draw(st.integers(-len(PARTS) // 3, len(PARTS) - 1))
    return "".join(draw(st.sampled_from(invalid if index == spoilt else valid))
                   for index, (valid, invalid) in enumerate(PARTS))


@settings(max_examples=400)
@given(locomo_times())
def test_exactly_what_the_c_locale_accepts(value: str) -> None:
    try:
        reference: datetime | None = datetime.strptime(value.strip(), C_FORMAT)
    except ValueError:
        reference = None
    if reference is None:
        with pytest.raises(Unreadable):
            locomo(value)
    else:
        assert locomo(value) == reference.isoformat() + "Z"

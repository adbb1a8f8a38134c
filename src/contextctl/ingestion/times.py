"""A message's time as its record's ``validFrom``: RFC 3339 in UTC (``Z``). Read are ISO 8601
with a zone (``Z`` or ``z``, as RFC 3339 allows either) or without one (taken as UTC), numbers
since the epoch (seconds, or milliseconds as JavaScript writes them), also written in a string
as JSON writes them (``"1700000000.5"``), and LoCoMo's ``1:56 pm on 8 May, 2023``. A time that
is none of these refuses the file: a wrong time would date a record without a word."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

from context_service.contextctl.ingestion.decoding import Unreadable

MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august",
          "september", "october", "november", "december")
# LoCoMo's "1:56 pm on 8 May, 2023": the pattern strptime makes of "%I:%M %p on %d %B, %Y" in the
# C locale, case-insensitive, so that it takes exactly what it took. Not strptime itself: its
# month names and am/pm are those of the process's LC_TIME, and a library that calls
# setlocale(LC_ALL, "") under a German locale would have it refuse "May"
LOCOMO_TIME = re.compile(
    r"(?P<hour>1[0-2]|0[1-9]|[1-9]):(?P<minute>[0-5]\d|\d)\s+(?P<half>am|pm)\s+on\s+"
    r"(?P<day>3[0-1]|[1-2]\d|0[1-9]|[1-9]| [1-9])\s+(?P<month>" + "|".join(MONTHS) + r"),\s+"
    r"(?P<year>\d\d\d\d)", re.IGNORECASE)
# a number written in a string as JSON writes it (``"1700000000.5"``, as some exporters quote
# their times): ASCII digits only, since float() would also take "NaN", "1_0" and other scripts'
# digits, none of which is a time anyone wrote
NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
BASIC_DATE = re.compile(r"[0-9]{8}")  # ISO 8601's YYYYMMDD
# a number this large is milliseconds: as seconds it would be after the year 5138, as
# milliseconds it is after 3 March 1973 (JavaScript's Date.now(), many exports' times)
MILLISECONDS_FROM = 100_000_000_000
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def time_of(value: Any, where: str) -> str | None:
    """The time as RFC 3339 in UTC, ``None`` when there is none; ``where`` names it in the
    reason a file is refused."""
    if value is None or value == "":
        return None
    try:
        if isinstance(value, int | float) and not isinstance(value, bool):
            moment = _from_number(value)
        elif isinstance(value, str):
            moment = _parse_text_time(value.strip())
        else:
            raise ValueError(value)
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        moment = moment.astimezone(UTC)  # OverflowError: the instant leaves years 1 to 9999
    except (ValueError, OverflowError, OSError) as exc:
        raise Unreadable(f"{where}: time {value!r} is not a date and time") from exc
    return moment.isoformat().replace("+00:00", "Z")


def _from_number(value: float) -> datetime:
    if abs(value) >= MILLISECONDS_FROM:
        return EPOCH + timedelta(milliseconds=value)  # exact for whole milliseconds
    return datetime.fromtimestamp(value, UTC)


def _parse_text_time(value: str) -> datetime:
    # a number before ISO 8601, but for its basic date "20230508" (8 May 2023, as it always
    # was): Python's reading takes a longer run of digits' first eight as a date, any character
    # as the separator and the rest as a time, "1701011200000" (milliseconds in 2023) as 1701
    if NUMBER.fullmatch(value) and not BASIC_DATE.fullmatch(value):
        return _from_number(int(value) if value.lstrip("-").isdigit() else float(value))
    try:
        # Python reads an upper-case Z only; RFC 3339 allows z as well
        return datetime.fromisoformat(value[:-1] + "Z" if value.endswith("z") else value)
    except ValueError:
        return _locomo_time(value)


def _locomo_time(value: str) -> datetime:
    found = LOCOMO_TIME.fullmatch(value)
    if found is None:
        raise ValueError(value)
    hour = int(found["hour"]) % 12 + (12 if found["half"].lower() == "pm" else 0)
    # a name that matched only by case folding (a long s, U+017F, for an s) is no month, as before
    month = MONTHS.index(found["month"].lower()) + 1
    # a day the month does not have (31 April) is refused here
    return datetime(int(found["year"]), month, int(found["day"]), hour, int(found["minute"]))

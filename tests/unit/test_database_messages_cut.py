"""The database's primary message shown to a caller (a template run's failure, registration's
check) quotes what it refused in double quotes, which may be the caller's value whole: each
quoted stretch is cut as a caller's value is (decision 0059), and the whole message is bounded
even when the value holds quotes of its own."""

from __future__ import annotations

from context_service.domain.echoed import ECHO, TELLING, told


def test_a_quoted_value_is_cut_and_the_rest_kept() -> None:
    message = 'invalid input syntax for type integer: "' + "x" * 100 + '"'
    assert told(message) == ('invalid input syntax for type integer: "' + "x" * ECHO
                             + '\u2026"')


def test_a_message_without_long_quotes_is_unchanged() -> None:
    for message in ("division by zero", 'column "amount" does not exist',
                    'operator does not exist: text = integer'):
        assert told(message) == message


def test_a_value_holding_quotes_still_gives_a_bounded_message() -> None:
    message = 'invalid input syntax for type integer: "a"' + "x" * 100_000 + '"'
    shown = told(message)
    assert len(shown) == TELLING + 1 and shown.startswith(message[:TELLING])

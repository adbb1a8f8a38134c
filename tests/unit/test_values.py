"""Shared value rules (spec 2.1, 1.1.2): names, quantities and their canonical form, durations,
digests and timestamps. Table tests pin the documented cases; Hypothesis properties compare the
quantity code with a slow, independently written reference.
"""

from __future__ import annotations

import math
import re
from datetime import UTC, datetime, timedelta, timezone
from fractions import Fraction

import pytest
from hypothesis import assume, example, given
from hypothesis import strategies as st

from context_service.domain.values import (
    canonical_quantity,
    format_timestamp,
    is_context_name,
    is_digest,
    is_dns_label,
    is_dns_subdomain,
    is_positive_quantity,
    parse_duration_ns,
    parse_quantity,
    parse_timestamp,
)

# --- reference implementation of spec 2.1.4 / 2.1.5 (no regular expressions) -------------------

DIGITS = "0123456789"
REF_BINARY = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
REF_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
REF_SUFFIX_OF = {exponent: suffix for suffix, exponent in REF_DECIMAL.items()}
LIMIT = 2**63


def _take_digits(text: str, start: int) -> int:
    end = start
    while end < len(text) and text[end] in DIGITS:
        end += 1
    return end


def reference_parse(text: str) -> tuple[Fraction, str] | None:
    """Exact value and family of a quantity, or None (character by character, spec 2.1.4)."""
    pos = 0
    negative = False
    if text and text[0] in "+-":
        negative = text[0] == "-"
        pos = 1
    int_end = _take_digits(text, pos)
    whole, frac = text[pos:int_end], ""
    pos = int_end
    if pos < len(text) and text[pos] == ".":
        frac_end = _take_digits(text, pos + 1)
        frac = text[pos + 1 : frac_end]
        pos = frac_end
    if not whole and not frac:
        return None
    number = Fraction(int(whole or "0") * 10 ** len(frac) + int(frac or "0"), 10 ** len(frac))
    if negative:
        number = -number
    suffix = text[pos:]
    if suffix in REF_BINARY:
        return number * 1024 ** REF_BINARY[suffix], "binary"
    if suffix in REF_DECIMAL:
        return number * Fraction(10) ** REF_DECIMAL[suffix], "decimal"
    if len(suffix) > 1 and suffix[0] in "eE":
        exponent = suffix[1:]
        sign = -1 if exponent[0] == "-" else 1
        if exponent[0] in "+-":
            exponent = exponent[1:]
        if not exponent or any(c not in DIGITS for c in exponent):
            return None
        return number * Fraction(10) ** (sign * int(exponent)), "exponent"
    return None


def reference_canonical(value: Fraction, family: str) -> str:
    """Canonical form of a positive value (spec 2.1.5), computed on a count of nano-units."""
    nanos = math.ceil(value * 10**9)
    if family == "binary" and nanos % 10**9 == 0 and nanos // 10**9 >= 1024:
        whole = nanos // 10**9
        steps = max(k for k in range(7) if whole % 1024**k == 0)
        return f"{whole // 1024**steps}{['', 'Ki', 'Mi', 'Gi', 'Ti', 'Pi', 'Ei'][steps]}"
    digits = str(nanos)
    mantissa_digits = digits.rstrip("0")
    exponent = -9 + len(digits) - len(mantissa_digits)
    lowered = exponent // 3 * 3
    mantissa = int(mantissa_digits) * 10 ** (exponent - lowered)
    if family == "exponent":
        return f"{mantissa}" + (f"e{lowered}" if lowered else "")
    if lowered > 18:
        mantissa *= 10 ** (lowered - 18)
        lowered = 18
    return f"{mantissa}{REF_SUFFIX_OF[lowered]}"


def rounded(value: Fraction) -> Fraction:
    """The value rounded up to a multiple of 10^-9 (step 1 of spec 2.1.5)."""
    return Fraction(math.ceil(value * 10**9), 10**9)


# --- canonical sizes: the spec table and edge cases -----------------------------------------------

SPEC_TABLE = [
    ("5Gi", "5Gi"),
    ("1024Mi", "1Gi"),
    ("1.5Gi", "1536Mi"),
    ("0.5Gi", "512Mi"),
    ("1.5Ki", "1536"),
    ("1000M", "1G"),
    ("1.5G", "1500M"),
    ("100", "100"),
    ("0.5", "500m"),
    ("1e3", "1e3"),
]


@pytest.mark.parametrize(("sent", "echoed"), SPEC_TABLE)
def test_canonical_form_matches_the_spec_table(sent: str, echoed: str) -> None:
    assert is_positive_quantity(sent)
    assert canonical_quantity(sent) == echoed


@pytest.mark.parametrize(
    ("sent", "echoed"),
    [
        # lone E is exa, E followed by an integer is an exponent
        ("1E", "1E"),
        ("1E3", "1e3"),
        ("1E+3", "1e3"),
        ("2e0", "2"),
        ("12e1", "120"),
        ("1.5e3", "1500"),
        ("1e-3", "1e-3"),
        ("1e4", "10e3"),
        ("1e16", "10e15"),
        ("9e18", "9e18"),
        ("+1e3", "1e3"),
        # bare decimal points on either side
        ("5.", "5"),
        (".5", "500m"),
        ("5.Gi", "5Gi"),
        (".5Ki", "512"),
        ("+5Gi", "5Gi"),
        ("007Mi", "7Mi"),
        # decimal family: mantissa without trailing zeros, exponent lowered to a multiple of 3
        ("1000", "1k"),
        ("1500", "1500"),
        ("10000", "10k"),
        ("0.1", "100m"),
        ("0.01", "10m"),
        ("0.0001", "100u"),
        ("1n", "1n"),
        ("1000n", "1u"),
        ("1500m", "1500m"),
        # binary family: whole values of at least 1024 only; at most six divisions
        ("1Ki", "1Ki"),
        ("1023", "1023"),
        ("0.5Ki", "512"),
        ("1.0009765625Ki", "1025"),
        ("1024Ki", "1Mi"),
        ("1048576Ki", "1Gi"),
        ("1024Ti", "1Pi"),
        ("4Ei", "4Ei"),
        ("1536Ki", "1536Ki"),
        ("0.25Ki", "256"),
        ("0.001Ki", "1024m"),
        # more than nine fractional digits round up to the next multiple of 10^-9
        ("0.0000000001", "1n"),
        ("1.0000000001", "1000000001n"),
        ("0.0000000015", "2n"),
        ("1e-10", "1e-9"),
        ("1.0000000000000001Ki", "1024000000001n"),
        ("0.1n", "1n"),
        ("1.5n", "2n"),
        # limits near 2^63
        ("9223372036854775807", "9223372036854775807"),
        ("7Ei", "7Ei"),
        ("8191Pi", "8191Pi"),
        ("9.223372036854775807E", "9223372036854775807"),
    ],
)
def test_canonical_form_edge_cases(sent: str, echoed: str) -> None:
    assert is_positive_quantity(sent), sent
    assert canonical_quantity(sent) == echoed


@pytest.mark.parametrize(
    "text",
    [
        # from the spec
        "0", "0Gi", "-1Gi", "abc", "1 Gi", "",
        # not strictly positive
        "-0", "+0", "0.0", "0e5", "-.5", "-1e3", "0n",
        # at or above 2^63
        "8Ei", "9223372036854775808", "9.223372036854775808E", "8192Pi", "1e19", "10E",
        "1e400", "100000000000000000000",
        # malformed numbers and suffixes
        ".", "+", "-", "+-1", "1.2.3", "1..", "..5", "Gi", "1e", "1e+", "1E-", "1e1.5", "1ee3",
        "1Kb", "1ki", "1KI", "1K", "1i", "1Gib", "1GiB", "1b", "1B", "1 ", " 1", "1\t", "1\n",
        "1_000", "1,5", "1/2", "0x10", "1e3Gi", "1Gi1", "inf", "nan", "Infinity", "1e3 ",
        # digits must be ASCII
        "\u0663Gi", "1\u0663", "1e\u0663", "\uff11Gi",
    ],
)
def test_invalid_sizes_are_rejected(text: str) -> None:
    assert not is_positive_quantity(text)


def test_limit_is_exclusive_at_two_to_the_sixty_third() -> None:
    assert is_positive_quantity(str(2**63 - 1))
    assert not is_positive_quantity(str(2**63))
    assert is_positive_quantity("7.999999999Ei")
    assert not is_positive_quantity("8.0Ei")
    assert is_positive_quantity("9223372036854775807.999999999")


def test_canonical_quantity_refuses_a_non_quantity() -> None:
    with pytest.raises(ValueError, match="not a quantity"):
        canonical_quantity("1 Gi")


def test_parse_quantity_keeps_the_family() -> None:
    cases = {"1Ki": "binary", "1": "decimal", "1k": "decimal", "1E": "decimal",
             "1E3": "exponent", "1e0": "exponent"}
    for text, family in cases.items():
        parsed = parse_quantity(text)
        assert parsed is not None
        assert parsed.family == family, text
    negative = parse_quantity("-1.5Ki")
    assert negative is not None
    assert negative.value == -1536


# --- quantity properties ------------------------------------------------------------------------

_SUFFIXES = st.one_of(
    st.sampled_from([*REF_BINARY, *REF_DECIMAL]),
    st.builds(lambda e, sign, n: f"{e}{sign}{n}", st.sampled_from("eE"),
              st.sampled_from(["", "+", "-"]), st.integers(0, 30)),
    st.sampled_from(["e", "E+", "e-", "Kb", "ki", "i", "KI", " ", "Gi ", "e1.5", "Ee", "\u0663"]),
)
_NUMBERS = st.builds(
    lambda whole, point, frac: whole + point + frac,
    st.text(DIGITS, max_size=22),
    st.sampled_from(["", "."]),
    st.text(DIGITS, max_size=13),
)
QUANTITY_LIKE = st.builds(
    lambda sign, number, suffix: sign + number + suffix,
    st.sampled_from(["", "", "+", "-"]),
    _NUMBERS,
    _SUFFIXES,
)


@st.composite
def valid_sizes(draw: st.DrawFn) -> str:
    text = draw(QUANTITY_LIKE)
    parsed = reference_parse(text)
    assume(parsed is not None and 0 < parsed[0] < LIMIT)
    return text


@given(st.one_of(QUANTITY_LIKE, st.text(max_size=12)))
@example("1E")
@example("1E3")
@example(".5")
@example("5.")
@example("1e-0")
def test_parse_quantity_agrees_with_the_reference(text: str) -> None:
    expected = reference_parse(text)
    parsed = parse_quantity(text)
    if expected is None:
        assert parsed is None
        assert not is_positive_quantity(text)
        return
    assert parsed is not None
    assert (parsed.value, parsed.family) == expected
    assert is_positive_quantity(text) == (0 < expected[0] < LIMIT)


@given(valid_sizes())
def test_canonical_form_agrees_with_the_reference(text: str) -> None:
    parsed = reference_parse(text)
    assert parsed is not None
    assert canonical_quantity(text) == reference_canonical(*parsed)


@given(valid_sizes())
def test_canonical_form_is_idempotent_and_exact(text: str) -> None:
    canonical = canonical_quantity(text)
    assert canonical_quantity(canonical) == canonical
    original = parse_quantity(text)
    again = parse_quantity(canonical)
    assert original is not None
    assert again is not None
    assert again.value == rounded(original.value)
    assert re.fullmatch(r"[0-9]+(Ki|Mi|Gi|Ti|Pi|Ei|e-?[0-9]+|[numkMGTPE])?", canonical)


@given(st.integers(1, LIMIT - 1), st.sampled_from(sorted(REF_BINARY.items())))
def test_whole_binary_sizes_use_the_largest_binary_suffix(
        count: int, suffix: tuple[str, int]) -> None:
    name, power = suffix
    value = count * 1024**power
    assume(value < LIMIT)
    match = re.fullmatch(r"([0-9]+)(Ki|Mi|Gi|Ti|Pi|Ei)?", canonical_quantity(f"{count}{name}"))
    assert match is not None
    mantissa, steps = int(match[1]), REF_BINARY.get(match[2] or "", 0)
    assert mantissa * 1024**steps == value
    assert steps == 6 or mantissa % 1024 != 0


# --- names --------------------------------------------------------------------------------------

def _subdomain_of_length(length: int) -> str:
    labels, size = [], 0
    while size < length:
        room = length - size - (1 if labels else 0)
        label = "a" * min(63, room)
        if room - len(label) == 1:  # never leave room for a lone dot
            label = label[:-1]
        labels.append(label)
        size = len(".".join(labels))
    return ".".join(labels)


@pytest.mark.parametrize("name", ["a", "0", "a0", "a-b", "a--b", "0-0", "abc-123", "a" * 50,
                                  "1" + "-" * 48 + "2"])
def test_valid_context_names(name: str) -> None:
    assert is_context_name(name)


@pytest.mark.parametrize("name", ["", "a" * 51, "-a", "a-", "-", "A", "aB", "a.b", "a_b", "a b",
                                  " a", "a\n", "\u00e9", "a/b", "a:b", "\u0663"])
def test_invalid_context_names(name: str) -> None:
    assert not is_context_name(name)


@pytest.mark.parametrize("label", ["a", "9", "a-9", "a" * 63, "x" + "-" * 61 + "y"])
def test_valid_dns_labels(label: str) -> None:
    assert is_dns_label(label)


@pytest.mark.parametrize("label", ["", "a" * 64, "a.b", "-a", "a-", "A", "a_b", "a b", "a\n"])
def test_invalid_dns_labels(label: str) -> None:
    assert not is_dns_label(label)


@pytest.mark.parametrize("value", ["a", "a.b", "a-b.c-d", "0.0.0", "a" * 63, "a" * 64,
                                   _subdomain_of_length(253)])
def test_valid_dns_subdomains(value: str) -> None:
    assert len(value) <= 253
    assert is_dns_subdomain(value)


@pytest.mark.parametrize("value", ["", _subdomain_of_length(254), "a..b", ".a", "a.", "a.-b",
                                   "a-.b", "A.b", "a_b", "a b", "a.b\n"])
def test_invalid_dns_subdomains(value: str) -> None:
    assert not is_dns_subdomain(value)


def test_subdomain_helper_builds_the_intended_lengths() -> None:
    assert len(_subdomain_of_length(253)) == 253
    assert len(_subdomain_of_length(254)) == 254


@given(st.text(alphabet="abz09-.", max_size=70))
def test_name_rules_nest(value: str) -> None:
    """Every context name is a label, and every label is a subdomain."""
    if is_context_name(value):
        assert is_dns_label(value)
    if is_dns_label(value):
        assert is_dns_subdomain(value)
        assert "." not in value


def test_digests() -> None:
    assert is_digest("0123456789abcdef" * 4)
    for bad in ["", "0" * 63, "0" * 65, "A" * 64, "g" * 64, "0" * 63 + "\n", " " + "0" * 63]:
        assert not is_digest(bad), bad


# --- durations ----------------------------------------------------------------------------------

NS = {"ns": 1, "us": 10**3, "\u00b5s": 10**3, "\u03bcs": 10**3, "ms": 10**6, "s": 10**9,
      "m": 60 * 10**9, "h": 3600 * 10**9}


@pytest.mark.parametrize(
    ("text", "nanos"),
    [
        ("0", 0), ("+0", 0), ("-0", 0), ("0s", 0), ("0h0m", 0),
        ("1ns", 1), ("1us", 1_000), ("1\u00b5s", 1_000), ("1\u03bcs", 1_000), ("1ms", 10**6),
        ("1s", 10**9), ("1m", 60 * 10**9), ("1h", 3600 * 10**9),
        ("168h", 168 * 3600 * 10**9), ("1h30m", 5400 * 10**9), ("1.5h", 5400 * 10**9),
        ("90s", 90 * 10**9), (".5s", 5 * 10**8), ("1.s", 10**9), ("1m5s", 65 * 10**9),
        ("1h1h", 7200 * 10**9), ("2h45m30.5s", (2 * 3600 + 45 * 60 + 30) * 10**9 + 5 * 10**8),
        ("+1h", 3600 * 10**9), ("-1s", -(10**9)), ("-1.5h", -5400 * 10**9),
        ("1.000000001s", 10**9 + 1), ("0.5ns", 0), ("007s", 7 * 10**9),
    ],
)
def test_durations(text: str, nanos: int) -> None:
    assert parse_duration_ns(text) == nanos


@pytest.mark.parametrize(
    "text",
    ["", "1", "00", "1d", "7d", "1w", "1y", "h", "s", ".s", "1.5.5h", "1 h", " 1h", "1h ", "1H",
     "1S", "1sec", "1hr", "--1h", "+-1h", "1h-1m", "1e3s", "\u0661h", "1\u00b5", "1\u03bc",
     "1u s", "0x1s", "1,5h", "\u00b5s", "1mss"],
)
def test_invalid_durations(text: str) -> None:
    assert parse_duration_ns(text) is None


@given(st.lists(st.tuples(st.integers(0, 10**6), st.sampled_from(sorted(NS))), min_size=1,
                max_size=5),
       st.sampled_from(["", "+", "-"]))
def test_duration_is_the_exact_sum_of_its_parts(parts: list[tuple[int, str]], sign: str) -> None:
    text = sign + "".join(f"{n}{unit}" for n, unit in parts)
    total = sum(n * NS[unit] for n, unit in parts)
    assert parse_duration_ns(text) == (-total if sign == "-" else total)


@given(st.integers(0, 10**4), st.text(DIGITS, min_size=1, max_size=12),
       st.sampled_from(sorted(NS)))
def test_fractional_durations_truncate_to_whole_nanoseconds(
        whole: int, frac: str, unit: str) -> None:
    exact = (Fraction(whole) + Fraction(int(frac), 10 ** len(frac))) * NS[unit]
    assert parse_duration_ns(f"{whole}.{frac}{unit}") == math.floor(exact)


# --- timestamps ---------------------------------------------------------------------------------

def _utc(*parts: int) -> datetime:
    return datetime(*parts, tzinfo=UTC)  # type: ignore[misc]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-05-01T10:11:12Z", _utc(2026, 5, 1, 10, 11, 12)),
        ("2026-05-01t10:11:12z", _utc(2026, 5, 1, 10, 11, 12)),
        ("2026-05-01T10:11:12.123456Z", _utc(2026, 5, 1, 10, 11, 12, 123456)),
        ("2026-05-01T10:11:12.1Z", _utc(2026, 5, 1, 10, 11, 12, 100000)),
        ("2026-05-01T10:11:12.000Z", _utc(2026, 5, 1, 10, 11, 12)),
        ("2026-05-01T10:11:12.1234569Z", _utc(2026, 5, 1, 10, 11, 12, 123456)),
        ("2026-05-01T10:11:12.999999999Z", _utc(2026, 5, 1, 10, 11, 12, 999999)),
        ("2026-05-01T10:11:12.123456789123Z", _utc(2026, 5, 1, 10, 11, 12, 123456)),
        ("2026-05-01T12:11:12+02:00", _utc(2026, 5, 1, 10, 11, 12)),
        ("2026-05-01T05:41:12-04:30", _utc(2026, 5, 1, 10, 11, 12)),
        ("2026-05-01T10:11:12+00:00", _utc(2026, 5, 1, 10, 11, 12)),
        ("2026-05-01T10:11:12-00:00", _utc(2026, 5, 1, 10, 11, 12)),
        ("2026-01-01T00:30:00+01:00", _utc(2025, 12, 31, 23, 30)),
        ("2026-12-31T23:00:00-23:59", _utc(2027, 1, 1, 22, 59)),
        ("2024-02-29T00:00:00Z", _utc(2024, 2, 29)),
        ("0001-01-01T00:00:00Z", _utc(1, 1, 1)),
        ("9999-12-31T23:59:59.999999Z", _utc(9999, 12, 31, 23, 59, 59, 999999)),
    ],
)
def test_parse_timestamp(text: str, expected: datetime) -> None:
    parsed = parse_timestamp(text)
    assert parsed == expected
    assert parsed is not None
    assert parsed.utcoffset() == timedelta(0)


@pytest.mark.parametrize(
    "text",
    [
        "", "2026-05-01", "2026-05-01T10:11:12", "2026-05-01 10:11:12Z", "2026-05-01T10:11Z",
        "2026-5-01T10:11:12Z", "26-05-01T10:11:12Z", "2026-05-01T10:11:12.Z",
        "2026-05-01T10:11:12+0200", "2026-05-01T10:11:12+02", "2026-05-01T10:11:12 Z",
        "2026-05-01T10:11:12ZZ", "2026-05-01T10:11:12UTC", " 2026-05-01T10:11:12Z",
        "2026-05-01T10:11:12Z\n", "2026-02-29T00:00:00Z", "2026-13-01T00:00:00Z",
        "2026-00-01T00:00:00Z", "2026-04-31T00:00:00Z", "2026-05-01T24:00:00Z",
        "2026-05-01T10:60:00Z", "2026-05-01T10:11:60Z", "2026-05-01T10:11:12+24:00",
        "2026-05-01T10:11:12+05:60", "2026-05-01T10:11:12+99:99", "0000-01-01T00:00:00Z",
        "\u0662026-05-01T10:11:12Z", "2026-05-01T10:11:12.\u0661Z",
        "2026-05-01T10:11:12+\u0660\u0660:00",
        # the instant converted to UTC falls outside the representable years
        "0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-01:00",
    ],
)
def test_invalid_timestamps(text: str) -> None:
    assert parse_timestamp(text) is None


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (_utc(2026, 5, 1, 10, 11, 12), "2026-05-01T10:11:12Z"),
        (_utc(2026, 5, 1, 10, 11, 12, 123456), "2026-05-01T10:11:12.123456Z"),
        (_utc(2026, 5, 1, 10, 11, 12, 120000), "2026-05-01T10:11:12.12Z"),
        (_utc(2026, 5, 1, 10, 11, 12, 1), "2026-05-01T10:11:12.000001Z"),
        (_utc(2026, 5, 1, 10, 11, 12, 100), "2026-05-01T10:11:12.0001Z"),
        (datetime(2026, 5, 1, 12, 11, 12, tzinfo=timezone(timedelta(hours=2))),
         "2026-05-01T10:11:12Z"),
        (_utc(1, 1, 1), "0001-01-01T00:00:00Z"),
        (_utc(999, 12, 31, 23, 59, 59, 500000), "0999-12-31T23:59:59.5Z"),
    ],
)
def test_format_timestamp(value: datetime, text: str) -> None:
    assert format_timestamp(value) == text


FORMATTED = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{0,5}[1-9])?Z")
OFFSETS = st.builds(lambda minutes: timezone(timedelta(minutes=minutes)),
                    st.integers(-(24 * 60 - 1), 24 * 60 - 1))
AWARE = st.datetimes(min_value=datetime(2, 1, 1), max_value=datetime(9998, 12, 31),
                     timezones=st.just(UTC))


@given(AWARE)
def test_format_then_parse_round_trips(value: datetime) -> None:
    text = format_timestamp(value)
    assert FORMATTED.fullmatch(text), text
    assert parse_timestamp(text) == value


@given(AWARE, OFFSETS, st.text(DIGITS, max_size=3))
def test_offsets_are_converted_and_extra_digits_truncated(
        instant: datetime, zone: timezone, extra: str) -> None:
    local = instant.astimezone(zone)
    offset = zone.utcoffset(None)
    minutes = int(offset.total_seconds()) // 60
    sign = "-" if minutes < 0 else "+"
    text = (local.strftime("%Y-%m-%dT%H:%M:%S") if local.year >= 1000
            else f"{local.year:04d}" + local.strftime("-%m-%dT%H:%M:%S"))
    text += f".{local.microsecond:06d}{extra}{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"
    parsed = parse_timestamp(text)
    assert parsed == instant
    assert parsed is not None
    assert parsed.tzinfo == UTC

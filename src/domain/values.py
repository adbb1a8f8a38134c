"""Shared value rules: Kubernetes names, quantities and their canonical form, durations, digests,
timestamps and quoting. Exact decimal arithmetic throughout; no floating point.
"""

from __future__ import annotations

import functools
import json
import re
from datetime import UTC, datetime
from decimal import Decimal, InvalidOperation, localcontext
from fractions import Fraction

# Every pattern below is unambiguous and possessive (``++``, ``*+``): whatever follows a run, the
# engine never gives characters back, so a refusal costs time linear in the input; and every
# validator checks the length first, so no pattern ever sees more than its value's maximum.
# A label is alphanumeric runs joined by hyphen runs: ^[a-z0-9]([-a-z0-9]*[a-z0-9])?$ exactly.
_LABEL = r"[a-z0-9]++(?:-++[a-z0-9]++)*+"
CONTEXT_NAME = re.compile(_LABEL)
DNS_LABEL = re.compile(_LABEL)
DNS_SUBDOMAIN = re.compile(rf"{_LABEL}(?:\.{_LABEL})*+")
DIGEST = re.compile(r"[0-9a-f]{64}")
MAX_CONTEXT_NAME = 50
MAX_DNS_LABEL = 63
MAX_DNS_SUBDOMAIN = 253


def is_context_name(value: str) -> bool:
    return 0 < len(value) <= MAX_CONTEXT_NAME and CONTEXT_NAME.fullmatch(value) is not None


def is_dns_label(value: str) -> bool:
    return 0 < len(value) <= MAX_DNS_LABEL and DNS_LABEL.fullmatch(value) is not None


def is_dns_subdomain(value: str) -> bool:
    return 0 < len(value) <= MAX_DNS_SUBDOMAIN and DNS_SUBDOMAIN.fullmatch(value) is not None


def is_digest(value: str) -> bool:
    return len(value) == 64 and DIGEST.fullmatch(value) is not None


def quote(value: str) -> str:
    """A value inside a message, written as a JSON string."""
    return json.dumps(value, ensure_ascii=False)


# --- quantities -------------------------------------------------------------------------------

_BINARY = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_DECIMAL_SUFFIX = {v: k for k, v in _DECIMAL.items()}
# re.ASCII here and below: only 0-9 are digits (a bare \d accepts any script's digits).
# "\d+\.?\d*" split a run of digits in n ways and retried each: quadratic in the digits.
_QUANTITY = re.compile(
    r"([+-]?)(\d++(?:\.\d*+)?|\.\d++)(Ki|Mi|Gi|Ti|Pi|Ei|[eE][+-]?\d++|[numkMGTPE]?)", re.ASCII)
# No Kubernetes size needs more characters (2^63 has 19 digits; nine decimals are kept); a longer
# text is refused before any pattern or arithmetic sees it, and never fills the caches below.
MAX_QUANTITY = 64
_LIMIT = Fraction(2**63)


class Quantity:
    """A parsed Kubernetes quantity: exact value and its suffix family."""

    __slots__ = ("family", "value")

    def __init__(self, value: Fraction, family: str) -> None:
        self.value = value
        self.family = family  # binary | decimal | exponent


def parse_quantity(text: str) -> Quantity | None:
    if len(text) > MAX_QUANTITY:
        return None
    return _parse_quantity(text)


@functools.lru_cache(maxsize=1024)  # requests repeat a few sizes; Fraction math is slow
def _parse_quantity(text: str) -> Quantity | None:
    match = _QUANTITY.fullmatch(text)
    if match is None:
        return None
    sign, number, suffix = match.groups()
    try:
        with localcontext() as ctx:
            ctx.prec = 200
            magnitude = Fraction(Decimal(number))
    except InvalidOperation:
        return None
    if sign == "-":
        magnitude = -magnitude
    if suffix in _BINARY:
        return Quantity(magnitude * 1024 ** _BINARY[suffix], "binary")
    if suffix[:1] in ("e", "E") and len(suffix) > 1:
        exponent = int(suffix[1:])
        if abs(exponent) > 400:
            return None
        return Quantity(magnitude * Fraction(10) ** exponent, "exponent")
    return Quantity(magnitude * Fraction(10) ** _DECIMAL[suffix], "decimal")


def is_positive_quantity(text: str) -> bool:
    quantity = parse_quantity(text)
    return quantity is not None and 0 < quantity.value < _LIMIT


def canonical_quantity(text: str) -> str:
    """Kubernetes canonical form of a valid positive quantity (spec 2.1.5)."""
    if parse_quantity(text) is None:
        raise ValueError(f"not a quantity: {text[:MAX_QUANTITY]!r}")
    return _canonical_quantity(text)


@functools.lru_cache(maxsize=1024)
def _canonical_quantity(text: str) -> str:
    quantity = _parse_quantity(text)
    assert quantity is not None
    value = quantity.value
    nano = value * 10**9
    if nano.denominator != 1:  # more than nine fractional digits: round up to 1e-9
        value = Fraction(-((-nano.numerator) // nano.denominator), 10**9)
    if quantity.family == "binary" and value.denominator == 1 and value >= 1024:
        whole = value.numerator
        steps = 0
        while steps < 6 and whole % 1024 == 0 and whole >= 1024:
            whole //= 1024
            steps += 1
        return f"{whole}{['', 'Ki', 'Mi', 'Gi', 'Ti', 'Pi', 'Ei'][steps]}"
    mantissa, exponent = _decimal_parts(value)
    while exponent % 3 != 0:
        mantissa *= 10
        exponent -= 1
    if quantity.family == "exponent":
        return f"{mantissa}" + (f"e{exponent}" if exponent else "")
    if exponent > 18:
        mantissa *= 10 ** (exponent - 18)
        exponent = 18
    if exponent < -9:  # cannot happen after rounding to 1e-9
        exponent = -9
    return f"{mantissa}{_DECIMAL_SUFFIX[exponent]}"


def _decimal_parts(value: Fraction) -> tuple[int, int]:
    """value = m * 10**e with m whole and without trailing zeros (value has at most 9 decimals)."""
    exponent = 0
    while value.denominator != 1:
        value *= 10
        exponent -= 1
    mantissa = value.numerator
    if mantissa == 0:
        return 0, 0
    while mantissa % 10 == 0:
        mantissa //= 10
        exponent += 1
    return mantissa, exponent


# --- durations --------------------------------------------------------------------------------

_UNITS_NS = {"ns": 1, "us": 10**3, "\u00b5s": 10**3, "\u03bcs": 10**3, "ms": 10**6,
             "s": 10**9, "m": 60 * 10**9, "h": 3600 * 10**9}
_DURATION_NUMBER = r"(\d++(?:\.\d*+)?|\.\d++)(ns|us|\u00b5s|\u03bcs|ms|s|m|h)"
_DURATION = re.compile(rf"([+-]?)((?:{_DURATION_NUMBER})++)", re.ASCII)
_DURATION_PART = re.compile(_DURATION_NUMBER, re.ASCII)
MAX_DURATION = 64  # "2540400h10m10.000000000s", Go's longest, has 24 characters


def parse_duration_ns(text: str) -> int | None:
    """Nanoseconds of a Go-style duration, or None when it is not one (spec 2.1.7)."""
    if len(text) > MAX_DURATION:
        return None
    if text in ("0", "+0", "-0"):
        return 0
    match = _DURATION.fullmatch(text)
    if match is None:
        return None
    total = Fraction(0)
    for number, unit in _DURATION_PART.findall(match.group(2)):
        total += Fraction(Decimal(number)) * _UNITS_NS[unit]
    nanos = int(total)
    return -nanos if match.group(1) == "-" else nanos


# --- timestamps -------------------------------------------------------------------------------

_RFC3339 = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d++))?(Z|z|[+-]\d{2}:[0-5]\d)",
    re.ASCII,
)
MAX_TIMESTAMP = 64  # 25 characters and a zone, with room for nanoseconds and more


def parse_timestamp(text: str) -> datetime | None:
    """RFC 3339 with a zone, converted to UTC; fractional digits past microseconds truncated."""
    if len(text) > MAX_TIMESTAMP:
        return None
    match = _RFC3339.fullmatch(text)
    if match is None:
        return None
    year, month, day, hour, minute, second, frac, zone = match.groups()
    micro = int((frac or "0")[:6].ljust(6, "0"))
    iso = f"{year}-{month}-{day}T{hour}:{minute}:{second}.{micro:06d}"
    iso += "+00:00" if zone in ("Z", "z") else zone
    try:
        return datetime.fromisoformat(iso).astimezone(UTC)
    except (ValueError, OverflowError):  # OverflowError: the UTC instant leaves years 1..9999
        return None


def format_timestamp(value: datetime) -> str:
    """RFC 3339 in UTC with ``Z``; fractional seconds only when non-zero, trailing zeros cut."""
    value = value.astimezone(UTC)
    text = value.replace(tzinfo=None, microsecond=0).isoformat()  # strftime drops %Y's padding
    if value.microsecond:
        text += "." + f"{value.microsecond:06d}".rstrip("0")
    return text + "Z"

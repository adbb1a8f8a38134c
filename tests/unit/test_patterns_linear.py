"""Every validator and validating pattern a route reaches refuses a hostile value in time linear
in its length: 100 KB may cost about ten times 10 KB, never a hundred (a quadratic pattern held
the interpreter's lock for seconds on a 30,000-digit size). Measured as a ratio, never a time."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from types import ModuleType

import pytest

from context_service.domain import values
from context_service.domain.agent_credentials import token
from context_service.domain.context import index_checks
from context_service.domain.query import cursor
from context_service.domain.query_template import placeholders, validation
from context_service.http import cursors as http_cursors
from context_service.http import index_body
from context_service.http.agent import body as agent_body
from context_service.http.agent import fields_shapes
from context_service.http.routes import history, timeline

SMALL, LARGE = 10_000, 100_000
# Ten times the input may cost up to thirty times the time (noise on a shared machine); a
# quadratic refusal costs a hundred times.
MOST = 30.0

# Runs a backtracking pattern splits in many ways, each ending in a character nothing accepts.
SHAPES: dict[str, Callable[[int], str]] = {
    "digits": lambda n: "1" * n + "x",
    "digits-dot": lambda n: "1" * (n // 2) + "." + "1" * (n // 2) + "x",
    "digits-unit": lambda n: "1s" * (n // 2) + "x",
    "exponent": lambda n: "1e" + "1" * n + "x",
    "letters": lambda n: "a" * n + "!",
    "hyphens": lambda n: "a-" * (n // 2) + "-",
    "labels": lambda n: "a." * (n // 2) + "-",
    "hex": lambda n: "a" * n + "g",
    "fraction": lambda n: "2026-03-02T00:00:00." + "1" * n + "x",
    "spaces": lambda n: "Bearer" + " " * n + "\x00",
    "backticks": lambda n: "Object contains unknown field `" + "` - at `" * (n // 8) + "x",
    "dollars": lambda n: "$a" * (n // 2),
    "word": lambda n: "select" * (n // 6),
}

VALIDATORS: dict[str, Callable[[str], object]] = {
    "parse_quantity": values.parse_quantity,
    "is_positive_quantity": values.is_positive_quantity,
    "parse_duration_ns": values.parse_duration_ns,
    "parse_timestamp": values.parse_timestamp,
    "is_context_name": values.is_context_name,
    "is_dns_label": values.is_dns_label,
    "is_dns_subdomain": values.is_dns_subdomain,
    "is_digest": values.is_digest,
    "bearer_token": token.bearer_token,
    "token_id": token.token_id,
    "agent body message": agent_body._message,
}

MODULES: tuple[ModuleType, ...] = (values, token, index_checks, cursor, placeholders, validation,
                                   index_body, agent_body, fields_shapes, history, timeline,
                                   http_cursors)


def patterns() -> dict[str, re.Pattern[str]]:
    """Every compiled pattern the route modules and the domain rules they call hold."""
    found = {}
    for module in MODULES:
        for name, value in vars(module).items():
            if isinstance(value, re.Pattern) and isinstance(value.pattern, str):
                found[f"{module.__name__.rsplit('.', 1)[-1]}.{name}"] = value
    return found


def cost(check: Callable[[str], object], text: str) -> float:
    """The least of a few measures of ``check(text)``'s CPU time on this thread, each long enough
    to be measured. CPU time, not elapsed time: on a machine running more processes than it has
    cores a thread waits for a core now and then, which inflated an elapsed-time ratio past the
    bound (34 where the CPU-time ratio is 3 to 7)."""
    best = float("inf")
    for _ in range(3):
        runs = 0
        started = time.thread_time()
        while True:
            check(text)
            runs += 1
            elapsed = time.thread_time() - started
            if elapsed > 0.002:
                break
        best = min(best, elapsed / runs)
    return best


def ratio(check: Callable[[str], object], make: Callable[[int], str]) -> float:
    """LARGE's cost over SMALL's; measured again (at most thrice) while it looks too high, as a
    busy machine can slow one measurement: a quadratic refusal is too high every time."""
    found = float("inf")
    for _ in range(3):
        found = min(found, cost(check, make(LARGE)) / cost(check, make(SMALL)))
        if found < MOST:
            break
    return found


def worst_ratio(check: Callable[[str], object]) -> tuple[float, str]:
    return max((ratio(check, make), shape) for shape, make in SHAPES.items())


def test_every_route_pattern_is_found() -> None:
    names = set(patterns())
    assert {"values._QUANTITY", "values._DURATION", "values._RFC3339", "values.DNS_SUBDOMAIN",
            "token._BEARER", "history._INTEGER", "index_body.UPLOAD_ID"} <= names


@pytest.mark.parametrize("name", sorted(VALIDATORS))
def test_validators_refuse_in_linear_time(name: str) -> None:
    found, shape = worst_ratio(VALIDATORS[name])
    assert found < MOST, f"{name}: {shape} input ten times longer cost {found:.0f} times more"


@pytest.mark.parametrize("name", sorted(patterns()))
def test_patterns_match_in_linear_time(name: str) -> None:
    found, shape = worst_ratio(patterns()[name].fullmatch)
    assert found < MOST, f"{name}: {shape} input ten times longer cost {found:.0f} times more"


def test_the_measure_tells_a_quadratic_check() -> None:
    """The ratio these tests bound does grow past it for a check whose work is quadratic (one
    scan of the text per thousand characters)."""
    def quadratic(text: str) -> int:
        return sum(text.count(c) for c in text[:len(text) // 1000])

    assert ratio(quadratic, SHAPES["digits"]) > MOST


@pytest.mark.parametrize("text", ["1" * 30_000 + "x", "1" * 65, "1" * 64 + "Gi", "5" * 100_000])
def test_a_quantity_past_its_natural_length_is_refused(text: str) -> None:
    assert values.parse_quantity(text) is None
    assert not values.is_positive_quantity(text)
    with pytest.raises(ValueError, match="not a quantity"):
        values.canonical_quantity(text)


def test_long_but_natural_values_still_parse() -> None:
    assert values.canonical_quantity("0" * 40 + "1024Mi") == "1Gi"
    assert values.parse_duration_ns("2540400h10m10.000000000s") is not None
    stamp = values.parse_timestamp("2026-03-02T00:00:00." + "9" * 30 + "Z")
    assert stamp is not None and stamp.microsecond == 999999
    assert values.is_dns_subdomain(".".join(["a" * 63] * 3) + ".b")
    assert token.bearer_token("Bearer  bdk_" + "0" * 16 + "_" + "A" * 43) is not None


def test_the_rewritten_name_patterns_keep_the_spec_rule() -> None:
    spec = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
    samples = ["a", "a-b", "a--b", "-a", "a-", "0", "a.b", "ab-9", "A", "a_b", "", "-", "a-b-c"]
    for sample in samples:
        assert values.is_dns_label(sample) == (spec.fullmatch(sample) is not None), sample
    assert values.is_dns_subdomain("a.b-c.d")
    for bad in ("a..b", "a.-b", ".a", "a.", "a.b-"):
        assert not values.is_dns_subdomain(bad), bad

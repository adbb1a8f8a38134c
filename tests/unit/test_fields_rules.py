"""Pure rules of studied fields: coverage lines at the 90% edge, number formatting, exact
money sums and half-even averages, sorting with missing values last, groups past 50, filters
by type, and the live citation check."""

from __future__ import annotations

from datetime import date
from decimal import Decimal

from context_service.domain.fields.aggregates import groups_of, money_avg, money_sum, plain
from context_service.domain.fields.citation import citation
from context_service.domain.fields.coverage import coverage, coverage_line, coverage_lines
from context_service.domain.fields.engine import sort_documents
from context_service.domain.fields.filters import matches
from context_service.domain.fields.plan import Filter, Plan, plan_violations
from context_service.domain.fields.values import Money, Stated, format_number


def m(text: str, currency: str = "EUR") -> Money:
    return Money(Decimal(text), text, currency)


def s(doc: str, value: object, span: tuple[int, int] | None = None,
      quote: str | None = None) -> Stated:
    return Stated(doc, f"r-{doc}", value, span, quote)  # type: ignore[arg-type]


def test_coverage_lines_below_ninety_percent_only() -> None:
    assert coverage(17, 20) == 85 and coverage(2, 3) == 66 and coverage(0, 0) == 0
    assert coverage_line("a", 9, 10) is None  # exactly 90%
    assert coverage_line("a", 89, 99) == "a: stated in 89 of 99 documents (89%)"  # 89.9%
    assert coverage_line("a", 899, 999) == "a: stated in 899 of 999 documents (89%)"
    assert coverage_line("a", 900, 1000) is None
    assert coverage_lines([("b", 1), ("a", 0), ("c", 2)], 2) == [
        "a: stated in 0 of 2 documents (0%)", "b: stated in 1 of 2 documents (50%)"]


def test_numbers_in_their_shortest_form() -> None:
    assert [format_number(x) for x in (3.0, 0.5, 1e-7, 1e22, -0.0, 1.5e300, 0.1 + 0.2)] == [
        "3", "0.5", "1e-7", "1e22", "-0", "1.5e300", "0.30000000000000004"]


def test_money_sums_are_exact_and_averages_half_even() -> None:
    total, digits = money_sum([m("0.1"), m("0.20"), m("99999999999999999999.999999999999999999")])
    assert plain(total, digits) == "100000000000000000000.299999999999999999"
    assert money_avg([m("0.01"), m("0.02")]) == "0.0150"
    assert money_avg([m("1"), m("0"), m("0")]) == "0.33"
    assert money_avg([m("0.00005"), m("0")]) == "0.0000250"
    assert money_avg([m("1"), m("2"), m("2"), m("2")]) == "1.75"
    assert money_avg([m("-1"), m("0"), m("0")]) == "-0.33"
    assert plain(Decimal("-0.00"), 2) == "0.00"


def test_sort_puts_documents_without_a_value_last_either_way() -> None:
    keys = {"b": s("b", 2.0), "c": s("c", 1.0), "d": s("d", 2.0)}
    assert sort_documents(["e", "d", "c", "b", "a"], keys, False) == ["c", "b", "d", "a", "e"]
    assert sort_documents(["e", "d", "c", "b", "a"], keys, True) == ["b", "d", "c", "a", "e"]


def test_groups_by_count_then_key_null_last() -> None:
    keys = {f"d{i}": s(f"d{i}", float(i % 3)) for i in range(9)}
    keys["d9"] = s("d9", -0.0)
    groups, total = groups_of([*keys, "x", "y", "z", "w"], keys)
    assert [(k, len(v)) for k, v in groups] == [(0.0, 4), (None, 4), (1.0, 3), (2.0, 3)]
    assert total == 4


def test_filters_by_type() -> None:
    assert matches(Filter("f", "ne", {"amount": "1", "currency": "USD"}), m("1.00"))
    assert not matches(Filter("f", "lt", {"amount": "2", "currency": "USD"}), m("1"))
    assert matches(Filter("f", "eq", {"amount": "1.0", "currency": "EUR"}), m("1.00"))
    assert matches(Filter("f", "contains", "ÄB"), "xäby")
    assert matches(Filter("f", "prefix", ""), "")
    assert not matches(Filter("f", "ne", "a"), None)
    assert matches(Filter("f", "exists", False), None)
    assert matches(Filter("f", "gte", "2024-02-29"), date(2024, 2, 29))
    assert matches(Filter("f", "eq", 0), -0.0)


def test_citations_are_judged_against_the_current_text() -> None:
    stated = s("d", 1.0, (2, 5), "cde")
    assert citation(stated, "abcdefg")[0] == {"recordId": "r-d", "documentId": "d", "start": 2,
                                              "end": 5, "quote": "cde"}
    assert citation(stated, "abXdefg") == (None, "span_changed")
    assert citation(stated, "abc") == (None, "span_changed")
    assert citation(stated, None) == (None, "record_unavailable")
    assert citation(s("d", 1.0), "abc") == (None, "no_span")


def test_plan_rules_in_order() -> None:
    plan = Plan(fields=("x",), filters=(Filter("b", "exists", 1), Filter("b", "gt", True)),
                group_by="m")
    assert plan_violations(plan, {"b": "boolean", "m": "money"}) == [
        ("$.fields[0]", 'unknown field "x"'),
        ("$.filters[0].value", "value must be a boolean value"),
        ("$.filters[1].op", "operator gt does not apply to boolean fields"),
        ("$.aggregate.groupBy", "cannot group by a money field")]

"""The placeholder scanner and statement checks of spec 11.2 checks 7-8 (pure, no database)."""

from __future__ import annotations

import pytest

from context_service.domain.errors import QueryTemplateRefusedError
from context_service.domain.query_template.commands import TemplateDraft
from context_service.domain.query_template.events import Parameter
from context_service.domain.query_template.placeholders import scan
from context_service.domain.query_template.validation import rewrite


@pytest.mark.parametrize(("sql", "found"), [
    ("SELECT :a, :b_1 FROM t WHERE x = :a", ["a", "b_1", "a"]),
    ("SELECT x::text, ':no' , E'\\':no', $$ :no $$, $tag$ :no $tag$, \"a:no\" FROM t", []),
    ("SELECT 1 -- :no\n, :yes /* :no /* nested :no */ :no */", ["yes"]),
    ("SELECT 'it''s :no', :yes", ["yes"]),
    ("SELECT a[1:2], :Upper, :lower", ["lower"]),
    ("SELECT :abcDef", ["abc"]),
])
def test_placeholders_outside_literals_identifiers_and_comments(sql: str,
                                                                found: list[str]) -> None:
    assert scan(sql).placeholders == found


def test_positional_parameters_and_dollar_identifiers() -> None:
    assert scan("SELECT $1").positional
    assert not scan("SELECT a$1 FROM t").positional
    assert not scan("SELECT $q$ $1 $q$").positional


def _draft(sql: str, *names: str) -> TemplateDraft:
    return TemplateDraft(description="d", sql=sql,
                         parameters=tuple(Parameter(name=n, type="text") for n in names))


def test_rewrite_numbers_placeholders_by_declaration_order() -> None:
    assert rewrite(_draft("SELECT :b, :a, :b::text", "a", "b")) == "SELECT $2, $1, $2::text"


@pytest.mark.parametrize(("sql", "names", "message"), [
    ("INSERT INTO t VALUES (1)", (), "sql must be a single SELECT or WITH statement"),
    ("/* c */ -- c\n selectx 1", (), "sql must be a single SELECT or WITH statement"),
    ("SELECT $1", (), "sql must use :name placeholders"),
    ("SELECT :x", (), 'placeholder ":x" is not a declared parameter'),
    ("SELECT 1", ("p",), 'parameter "p" is not used'),
])
def test_statement_checks(sql: str, names: tuple[str, ...], message: str) -> None:
    with pytest.raises(QueryTemplateRefusedError) as caught:
        rewrite(_draft(sql, *names))
    assert caught.value.message == "invalid query template: " + message


def test_leading_comments_and_case_are_allowed() -> None:
    assert rewrite(_draft("  /* a */ -- b\n wItH x AS (SELECT 1) SELECT * FROM x"))

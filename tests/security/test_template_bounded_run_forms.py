"""Templates that ran before their runs were bounded in bytes still run, with the same answer.

The statement becomes the subquery of a bounding query, after its trailing semicolons are cut
by a scan of its text. Every statement here is valid on its own (registration prepares it as
it is), so the bounding query must neither refuse it nor change its rows, order or columns.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.api.agent.templates_support import approve, registered, runner
from tests.api.agent.templates_support import run as run_template
from tests.api.conftest import Api
from tests.security.template_runs import corpus as corpus  # the fixture
from tests.security.template_runs import module_settings as module_settings  # the fixture

pytestmark = [pytest.mark.postgres, pytest.mark.shared_service]


def answer(api: Api, template_id: str, sql: str, values: dict[str, Any] | None = None,
           parameters: list[dict[str, Any]] | None = None, **extra: Any) -> tuple[int, Any]:
    registered(api, template_id, sql, parameters, **extra)
    approve(api, [template_id], set_id=template_id)
    resp = run_template(runner(api), template_id, values, set_id=template_id)
    return resp.status_code, resp.json()


def ok(columns: list[tuple[str, str]], rows: list[list[Any]],
       truncated: bool = False) -> tuple[int, Any]:
    return 200, {"columns": [{"name": n, "type": t} for n, t in columns], "rows": rows,
                 "rowCount": len(rows), "truncated": truncated}


T = "text"
I4 = "integer"

CASES: dict[str, tuple[str, tuple[int, Any]]] = {
    "cte": ("WITH a AS (SELECT 2 AS x UNION ALL SELECT 1) SELECT x FROM a ORDER BY x DESC",
            ok([("x", I4)], [[2], [1]])),
    "recursive": ("WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 3)"
                  " SELECT n FROM r ORDER BY n DESC", ok([("n", I4)], [[3], [2], [1]])),
    "values": ("SELECT * FROM (VALUES (3, 'c'), (1, 'a')) v ORDER BY 1",
               ok([("column1", I4), ("column2", T)], [[1, "a"], [3, "c"]])),
    "table": ("WITH t AS (SELECT 5 AS v) TABLE t", ok([("v", I4)], [[5]])),
    "union": ("SELECT 1 AS u UNION SELECT 3 UNION SELECT 2 ORDER BY 1 DESC LIMIT 2",
              ok([("u", I4)], [[3], [2]])),
    "except": ("SELECT g AS e FROM generate_series(1, 5) g EXCEPT SELECT 2 ORDER BY e DESC",
               ok([("e", I4)], [[5], [4], [3], [1]])),
    "order": ("SELECT g FROM generate_series(1, 50) g ORDER BY g % 7, g DESC LIMIT 4",
              ok([("g", I4)], [[49], [42], [35], [28]])),
    "named-q": ("SELECT 1 AS q, 'w' AS w", ok([("q", I4), ("w", T)], [[1, "w"]])),
    "duplicated": ("SELECT 1 AS a, 2 AS a", ok([("a", I4), ("a", I4)], [[1, 2]])),
    "e-string": ("SELECT E'it\\'s;' AS t, E'\\\\' AS b ;",
                 ok([("t", T), ("b", T)], [["it's;", "\\"]])),
    "nested-comment": ("SELECT 1 AS a /* outer /* inner */ ; still a comment */ ;",
                       ok([("a", I4)], [[1]])),
    "literal-semicolon": ("SELECT 'a;b' AS t;", ok([("t", T)], [["a;b"]])),
    "line-comment": ("SELECT 1 AS a -- done", ok([("a", I4)], [[1]])),
    # PostgreSQL ends a line comment at a carriage return as at a line feed
    "cr-comment": ("SELECT 1 AS a -- done\r;", ok([("a", I4)], [[1]])),
    # a dollar quote's tag, and a name, may hold any letter outside ASCII, emoji included
    "astral-tag": ("SELECT $\U0001F600$a;b$\U0001F600$ AS t", ok([("t", T)], [["a;b"]])),
    "astral-name": ('SELECT 1 AS x\U0001F600$$;', ok([("x\U0001F600$$", I4)], [[1]])),
    "no-columns": ("SELECT FROM generate_series(1, 2)", ok([], [[], []])),
    "types": ("SELECT 1.50::numeric(10, 2) AS n, 'ab'::varchar(3) AS v, 2::int8 AS b,"
              " true AS t, NULL AS z",
              ok([("n", "numeric(10,2)"), ("v", "character varying(3)"), ("b", "bigint"),
                  ("t", "boolean"), ("z", T)], [["1.50", "ab", 2, True, None]])),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_template_that_ran_before_answers_the_same(corpus: Api, case: str) -> None:
    sql, expected = CASES[case]
    assert answer(corpus, f"rv-{case}", sql) == expected


def test_a_parameter_next_to_a_dollar_quote(corpus: Api) -> None:
    status, body = answer(corpus, "rv-param", "SELECT :n::int||$$;$$ AS t;", {"n": 7},
                          [{"name": "n", "type": "integer", "required": True}])
    assert (status, body["rows"]) == (200, [["7;"]]), body


@pytest.mark.parametrize(("max_rows", "truncated"), [(1, True), (2, True), (3, False)])
def test_truncated_at_exactly_max_rows(corpus: Api, max_rows: int, truncated: bool) -> None:
    status, body = answer(corpus, f"rv-max-{max_rows}",
                          "WITH v(x) AS (VALUES (3), (2), (1)) TABLE v",
                          maxRows=max_rows)
    assert (status, body["rows"], body["truncated"]) == (
        200, [[3], [2], [1]][:max_rows], truncated), body


def test_a_placeholder_after_a_line_comment_ended_by_a_carriage_return(corpus: Api) -> None:
    """The placeholder scanner reads comments as PostgreSQL does: ``:n`` is on the next line."""
    status, body = answer(corpus, "rv-cr-param", "SELECT 1 AS a -- note\r, :n::int AS b",
                          {"n": 7}, [{"name": "n", "type": "integer", "required": True}])
    assert (status, body["rows"]) == (200, [[1, 7]]), body

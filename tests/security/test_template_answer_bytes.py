"""A template run's answer is bounded in bytes, not only in rows (docs/query-templates.md).

``maxRows`` (at most 1,000) bounded the rows of an answer and nothing bounded their bytes: an
approved ``SELECT repeat('x', 50000000) || g AS t FROM generate_series(1, 11) g`` with
``maxRows`` 10 answered 500 MB and took the serving process from about 230 MB to a 1.3 GB
peak, four runs at once (the sessions) about 5 GB. Now the rows' text is counted by the
database as it computes them: once it passes ``ANSWER_BYTES`` the run fails there, before the
row that passed it is sent, and is answered as a database failure (``54000``,
``program_limit_exceeded``). The process never receives more than about the limit, which the
tests measure as the growth of its resident memory's peak during one run.
"""

from __future__ import annotations

import gc
import tracemalloc
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from context_service import bootstrap
from context_service.adapters.postgres.sandbox.session import ANSWER_BYTES
from tests.api.agent.templates_support import approve, registered, runner, seeded
from tests.api.agent.templates_support import run as run_template
from tests.api.conftest import Api
from tests.security.template_runs import module_settings as module_settings  # the fixture

pytestmark = [pytest.mark.postgres, pytest.mark.shared_service]
REFUSED = {"code": "AGENT_QUERY_FAILED",
           "message": f"query template failed: its rows exceed {ANSWER_BYTES} bytes",
           "details": {"sqlstate": "54000"}}
# what one run may add to the process's peak: the limit, the row being received and the
# interpreter's copies of the rows, with room for the other threads; the rows kept from the
# process below are 100 MB to 550 MB
GROWTH = 4 * ANSWER_BYTES


@pytest.fixture(scope="module")
def corpus(module_api: Api) -> Iterator[Api]:
    """The corpus, and one run already done: what a first run sets up once in the process is
    no part of any run's measure."""
    seeded(module_api)
    assert ran(module_api, "warm", "SELECT 1 AS one", "warm")()[0] == 200
    yield module_api


def _status_kib(field: str) -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise AssertionError(field)


def peak_growth(action: Callable[[], Any]) -> tuple[Any, int]:
    """What ``action`` returns and the larger of two measures of what it added to the
    process at its peak: the interpreter's allocations (``tracemalloc``, every thread) and the
    rise of the resident peak above the resident size before it (Linux: writing 5 to
    ``clear_refs`` resets the peak; memory the allocator kept from earlier tests can hide
    part of a rise, never add to it)."""
    gc.collect()
    with open("/proc/self/clear_refs", "w") as clear:
        clear.write("5")
    before = _status_kib("VmRSS")
    tracemalloc.start()
    try:
        result = action()
        _, traced = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return result, max(traced, (_status_kib("VmHWM") - before) * 1024)


def ran(api: Api, template_id: str, sql: str, set_id: str, **extra: Any) -> Callable[[], Any]:
    registered(api, template_id, sql, **extra)
    approve(api, [template_id], set_id=set_id)
    agent = runner(api)

    def action() -> Any:
        resp = run_template(agent, template_id, set_id=set_id)
        return resp.status_code, resp.json()

    return action


def test_fifty_megabyte_rows_are_refused_before_they_are_received(corpus: Api) -> None:
    action = ran(corpus, "big", "SELECT repeat('x', 50000000) || g AS t"
                                " FROM generate_series(1, 11) g", "big", maxRows=10)
    (status, body), growth = peak_growth(action)
    assert (status, body) == (400, REFUSED), (status, str(body)[:200])
    assert growth < GROWTH, growth


def test_many_rows_within_max_rows_are_refused_at_the_limit(corpus: Api) -> None:
    """An honest shape: 200 rows of 1 MiB under ``maxRows`` 1000 (200 MiB before)."""
    action = ran(corpus, "many", "SELECT g, repeat('y', 1048576) AS t"
                                 " FROM generate_series(1, 200) g", "many", maxRows=1000)
    (status, body), growth = peak_growth(action)
    assert (status, body) == (400, REFUSED), (status, str(body)[:200])
    assert growth < GROWTH, growth


def test_a_refused_run_is_recorded_as_failed_with_its_sqlstate(
        corpus: Api, container: bootstrap.Container) -> None:
    action = ran(corpus, "recorded", "SELECT repeat('z', 20000000) AS t", "recorded")
    assert action() == (400, REFUSED)
    runs = [r.event for r in container.store.read(0, 1_000_000)
            if r.stream.kind == "query_run"
            and getattr(r.event, "template_id", "") == "recorded"]
    assert [(e.outcome, e.sqlstate, e.row_count, e.truncated) for e in runs] == [
        ("failed", "54000", 0, False)]


def test_the_limit_counts_each_row_as_its_text_as_a_record(corpus: Api) -> None:
    """A row of one plain text value is that value in parentheses: ``ANSWER_BYTES - 2``
    characters fill the limit exactly and are answered, one more is refused."""
    registered(corpus, "edge", "SELECT repeat('x', :n::int) AS t",
               [{"name": "n", "type": "integer", "required": True}])
    approve(corpus, ["edge"], set_id="edge")
    agent = runner(corpus)
    resp = run_template(agent, "edge", {"n": ANSWER_BYTES - 2}, set_id="edge")
    assert resp.status_code == 200, resp.text[:200]
    assert [len(row[0]) for row in resp.json()["rows"]] == [ANSWER_BYTES - 2]
    resp = run_template(agent, "edge", {"n": ANSWER_BYTES - 1}, set_id="edge")
    assert (resp.status_code, resp.json()) == (400, REFUSED)


def test_the_row_that_only_shows_truncation_is_never_sent(corpus: Api) -> None:
    """``truncated`` needs to know a row follows the last one answered, not its values: a
    100 MB row after ``maxRows`` small ones neither counts nor reaches the process."""
    action = ran(corpus, "tail", "SELECT CASE WHEN g <= 3 THEN 'a' || g"
                                 " ELSE repeat('x', 100000000) END AS t"
                                 " FROM generate_series(1, 4) g ORDER BY g", "tail",
                 maxRows=3)
    (status, body), growth = peak_growth(action)
    assert status == 200, str(body)[:200]
    assert (body["rows"], body["rowCount"], body["truncated"]) == (
        [["a1"], ["a2"], ["a3"]], 3, True)
    assert growth < GROWTH, growth


@pytest.mark.parametrize(("max_rows", "truncated"), [(4, True), (5, False), (6, False)])
def test_truncated_still_means_more_than_max_rows(corpus: Api, max_rows: int,
                                                  truncated: bool) -> None:
    template = f"count-{max_rows}"
    action = ran(corpus, template, "SELECT g FROM generate_series(1, 5) g", template,
                 maxRows=max_rows)
    status, body = action()
    assert status == 200, body
    assert (body["rows"], body["truncated"]) == (
        [[g] for g in range(1, min(max_rows, 5) + 1)], truncated)


def test_a_statement_ending_in_semicolons_and_a_comment_still_runs(corpus: Api) -> None:
    """The statement becomes a subquery of the bounding query: what may end a statement
    (semicolons, a line comment) must not end that query."""
    action = ran(corpus, "ended", "SELECT 'a;b' AS t, $$;$$ AS u ; ; -- done", "ended")
    assert action() == (200, {"columns": [{"name": "t", "type": "text"},
                                          {"name": "u", "type": "text"}],
                              "rows": [["a;b", ";"]], "rowCount": 1, "truncated": False})

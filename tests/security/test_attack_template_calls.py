"""Attacks on what a query template may call, from the side of an administrator registering a
template an agent will run.

The allow-list names its ``STABLE`` value functions by name (``sandbox/calls.py``), and a name
covers every overload of it: ``age`` is listed for the age of a timestamp, but ``age(xid)``
reads the cluster's next transaction id, the same counter as the ``txid_*`` functions the
sandbox refuses. A template returning it, run twice, tells how many transactions every other
workspace (and the service itself) committed in between: a side channel across tenants.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from context_service import bootstrap
from tests.api.agent.templates_support import approve, register, registered, runner, seeded
from tests.api.agent.templates_support import run as run_template
from tests.api.conftest import Api
from tests.security.template_runs import module_settings as module_settings  # the fixture
from tests.support.api_helpers import fresh

pytestmark = [pytest.mark.postgres, pytest.mark.shared_service]
REFUSED = "invalid query template: "
NOT_ALLOWED = REFUSED + "sql calls a function that is not allowed: "


@pytest.fixture(scope="module")
def corpus(module_api: Api) -> Iterator[Api]:
    seeded(module_api)
    registered(module_api, "count-passages", "SELECT count(*) AS n FROM passages")
    approve(module_api, ["count-passages"])
    yield module_api


def transactions_elsewhere(container: bootstrap.Container, count: int) -> None:
    """``count`` committed transactions of another session, each holding a transaction id (as
    every append of another workspace does)."""
    for _ in range(count):
        with container.datastore.transaction(commit=True) as cur:
            cur.execute("SELECT pg_catalog.txid_current()")


@pytest.mark.parametrize("sql", [
    "SELECT age('3'::xid) AS n",
    "SELECT pg_catalog.age(CAST('3' AS xid)) AS n",
    "SELECT count(*) AS n FROM passages WHERE age('3'::xid) > 0",
    "SELECT n FROM (SELECT age(x) AS n FROM (VALUES ('3'::xid)) v(x)) t",
])
def test_the_age_of_a_transaction_id_is_refused_at_registration(corpus: Api, sql: str) -> None:
    resp = register(corpus, fresh("xid-age"), sql)
    assert resp.status_code == 400, resp.text
    assert resp.json()["message"] == NOT_ALLOWED + "age", resp.text


def test_the_age_of_a_timestamp_stays_allowed(corpus: Api) -> None:
    """The refusal is of the overload, not of the name the allow-list lists on purpose."""
    registered(corpus, "timestamp-age", "SELECT age(now(), valid_from) AS a FROM passages"
                                        " ORDER BY ordinal")
    registered(corpus, "timestamp-age-one", "SELECT age(valid_from) AS a FROM passages"
                                            " ORDER BY ordinal")


def test_a_run_cannot_count_the_transactions_of_other_workspaces(
        corpus: Api, container: bootstrap.Container) -> None:
    """What registration let through: the template's two runs differ by exactly the
    transactions committed elsewhere between them (plus the first run's own record)."""
    resp = register(corpus, "xid-counter", "SELECT age('3'::xid)::int8 AS n")
    if resp.status_code == 400:  # refused: nothing to run, nothing to learn
        assert resp.json()["message"] == NOT_ALLOWED + "age"
        return
    assert resp.status_code == 201, resp.text
    approve(corpus, ["count-passages", "xid-counter"])
    agent = runner(corpus)
    first = run_template(agent, "xid-counter").json()["rows"][0][0]
    transactions_elsewhere(container, 25)
    second = run_template(agent, "xid-counter").json()["rows"][0][0]
    assert second - first < 25, (first, second)  # it learnt the others' 25 transactions

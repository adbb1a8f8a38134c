"""Template runs cannot occupy the service (issue 24): runs are admitted up to the sessions (and
a fixed share of the request threads), at most ``CS_AGENT_QUERY_PER_WORKSPACE`` per workspace;
any other run is answered ``503 AGENT_QUERY_CAPACITY_EXHAUSTED`` with ``Retry-After`` at once.

Slow runs are made by holding a lock on the table behind ``agent.passages``: every run reading
it waits in the database, holding its session and its request thread, until the lock goes.
"""

from __future__ import annotations

import time
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import psycopg
import pytest

from context_service import bootstrap
from context_service.adapters.eventstore.consistency import LogConsistency
from context_service.adapters.postgres.sandbox.admission import HANDLER_THREADS, RunLimits
from context_service.config import Settings
from context_service.http import common
from tests.api.agent.packs_corpus import FACTS
from tests.api.agent.packs_support import Agent, create_context, publish, record
from tests.api.agent.templates_support import RUN, approve, registered, run, runner, seeded
from tests.api.conftest import Api

pytestmark = pytest.mark.postgres
SLOW = "SELECT count(*) AS n FROM passages"
OTHER = "globex"
CAPACITY = {"code": "AGENT_QUERY_CAPACITY_EXHAUSTED",
            "message": "query templates are at capacity; retry after 1 seconds"}


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(data_dir=tmp_path, sandbox_image="busybox:1.36", kube_mode="off",
                    workers=("projections", "query-index"), agent_rate_per_second=0,
                    agent_query_connections=4, agent_query_per_workspace=2,
                    agent_query_wait_seconds=0.5)


def _other_workspace(api: Api) -> Agent:
    """globex: its owner gina, a collection, a template that does not read passages, a set
    approving it and a credential bound to that set."""
    gina = api.as_("user:gina")
    resp = api.as_("service:context-service-admin").put(
        f"/v1/namespaces/{OTHER}/members",
        {"subject": {"kind": "user", "name": "gina"}, "role": "owner"})
    assert resp.status_code in (200, 201), resp.text
    create_context(api, FACTS, owner="user:gina", ws=OTHER)
    publish(api, FACTS, "a" * 64, [record("g1", FACTS, "a" * 64, "globex only")],
            owner="user:gina", ws=OTHER)
    resp = gina.post(f"/v1/namespaces/{OTHER}/query-templates", {
        "id": "count-collections", "description": "collections of the scope",
        "sql": "SELECT count(*) AS n FROM collections", "timeoutMs": 10000})
    assert resp.status_code == 201, resp.text
    resp = gina.post(f"/v1/namespaces/{OTHER}/context-sets", {
        "id": "ops", "name": "Ops", "collections": [FACTS],
        "queryTemplates": ["count-collections"]})
    assert resp.status_code == 201, resp.text
    resp = gina.post(f"/api/w/{OTHER}/agent-credentials", {
        "name": "agent", "scopes": ["queries:run"], "expiresInDays": 30,
        "contextSetId": "ops"})
    assert resp.status_code == 201, resp.text
    return Agent(api, resp.json()["token"])


def _counted(agent: Agent) -> Any:
    """A run of globex's template (any status; ``Agent.post`` refuses 5xx answers)."""
    return agent.api.post(RUN, {"templateId": "count-collections"},
                          headers={"Authorization": f"Bearer {agent.token}"})


def _settled(container: bootstrap.Container) -> None:
    """The views have applied the setup (publishing computes features, slow on a busy host)."""
    consistency = LogConsistency(container.store, container.tracking, container.view_runners())
    assert consistency.wait(container.view_names, 60)


def _admitted(container: bootstrap.Container, count: int) -> None:
    deadline = time.monotonic() + 30
    while container.sandbox.admission.running < count:
        assert time.monotonic() < deadline, container.sandbox.admission.running
        time.sleep(0.02)


def _refused_at_capacity(resp: Any) -> None:
    assert resp.status_code == 503, resp.text
    assert resp.json() == CAPACITY
    assert resp.headers["Retry-After"] == "1"


def test_runs_beyond_their_share_are_refused_at_once_and_other_routes_keep_answering(
        api: Api, container: bootstrap.Container) -> None:
    seeded(api)
    registered(api, "slow", SLOW, timeoutMs=10000)
    approve(api, ["slow"])
    acme = runner(api)
    globex = _other_workspace(api)
    _settled(container)
    first = run(acme, "slow")
    assert first.status_code == 200, first.text
    assert first.json()["rows"] == [[7]]  # not slow before the lock
    conn = psycopg.connect(container.url)
    conn.execute("LOCK TABLE agent_data.passages IN ACCESS EXCLUSIVE MODE")
    # more requests than the handler threads: with runs queueing in threads, nothing else
    # could be answered until the lock goes
    with ThreadPoolExecutor(HANDLER_THREADS + 8) as pool:
        try:
            held: list[Future[Any]] = [pool.submit(run, acme, "slow") for _ in range(2)]
            _admitted(container, 2)  # the workspace's two runs wait in the database
            flood = [pool.submit(run, acme, "slow") for _ in range(HANDLER_THREADS)]
            answered = [f.result(timeout=30) for f in flood]
            # every run beyond the workspace's share was refused while the two still wait
            assert not any(f.done() for f in held)
            for resp in answered:
                _refused_at_capacity(resp)
            # other routes answer meanwhile, through the same handler threads
            listed = api.as_("user:alice").get("/v1/namespaces/acme/query-templates")
            assert listed.status_code == 200, listed.text
            assert not any(f.done() for f in held)
            # another workspace gets its share of the sessions
            other = _counted(globex)
            assert other.status_code == 200, other.text
            assert other.json()["rows"] == [[1]]
            assert not any(f.done() for f in held)
        finally:
            conn.close()  # the lock goes: the two waiting runs complete
        for future in held:
            resp = future.result(timeout=30)
            assert resp.status_code == 200, resp.text
            assert resp.json()["rows"] == [[7]]
    assert container.sandbox.admission.running == 0
    assert run(acme, "slow").status_code == 200  # the slots came back


def test_the_service_wide_cap_refuses_a_workspace_within_its_own_share(
        api: Api, container: bootstrap.Container) -> None:
    """Four sessions: two workspaces at two runs each fill them; a third workspace's first run
    is refused although its own share is free."""
    seeded(api)
    registered(api, "slow", SLOW, timeoutMs=10000)
    approve(api, ["slow"])
    acme = runner(api)
    globex = _other_workspace(api)
    _settled(container)
    conn = psycopg.connect(container.url)
    conn.execute("LOCK TABLE agent_data.passages IN ACCESS EXCLUSIVE MODE")
    sandbox = container.sandbox
    with ThreadPoolExecutor(4) as pool:
        try:
            held = [pool.submit(run, acme, "slow") for _ in range(2)]
            _admitted(container, 2)
            # globex's runs take the two other slots (admitted by hand: its template does not
            # wait on the lock, so its runs would not stay)
            assert sandbox.admission.enter(OTHER) and sandbox.admission.enter(OTHER)
            try:
                assert not sandbox.admission.enter("initech")  # service-wide: 4 of 4
                _refused_at_capacity(_counted(globex))
            finally:
                sandbox.admission.leave(OTHER)
                sandbox.admission.leave(OTHER)
            assert _counted(globex).status_code == 200
        finally:
            conn.close()
        assert all(f.result(timeout=30).status_code == 200 for f in held)


def test_refused_runs_are_not_recorded(api: Api, container: bootstrap.Container) -> None:
    seeded(api)
    registered(api, "slow", SLOW, timeoutMs=10000)
    approve(api, ["slow"])
    acme = runner(api)
    _settled(container)

    def runs() -> int:
        with container.datastore.transaction(commit=False) as cur:
            cur.execute("SELECT count(*) AS n FROM stored_events"
                        " WHERE topic LIKE '%%QueryTemplateRun'")
            return int(cur.fetchone()["n"])

    before = runs()
    conn = psycopg.connect(container.url)
    conn.execute("LOCK TABLE agent_data.passages IN ACCESS EXCLUSIVE MODE")
    with ThreadPoolExecutor(2) as pool:
        try:
            held = [pool.submit(run, acme, "slow") for _ in range(2)]
            _admitted(container, 2)
            for _ in range(5):
                _refused_at_capacity(run(acme, "slow"))
        finally:
            conn.close()
        assert all(f.result(timeout=30).status_code == 200 for f in held)
    assert runs() == before + 2  # the two that ran, never the five refused


def test_runs_may_hold_only_a_share_of_the_handler_threads() -> None:
    assert common._HANDLERS._max_workers == HANDLER_THREADS  # the pool's size
    assert RunLimits(sessions=4, wait_seconds=0.5, per_workspace=2).service_wide == 4
    many = RunLimits(sessions=64, wait_seconds=0.5, per_workspace=64)
    assert many.service_wide == HANDLER_THREADS // 4 < HANDLER_THREADS

"""PostgreSQL crashes and comes back twice while 16 clients write and read: the clients see
only right answers or 500/503, never a wrong one; the service recovers by itself (the same
process, no restart), every acknowledged write is in the log exactly once, and every view
equals a rebuild from position zero (the projection batches the crash lost are applied again)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from context_service import bootstrap
from context_service.config import Settings
from tests.e2e.server import ServerProcess
from tests.faults.burst import SUBJECT, Burst, check_log, context_body, log_markers
from tests.faults.conftest import Rebuild, caught_up
from tests.faults.postgres import PrivatePostgres
from tests.support.views import differences, snapshot

pytestmark = [pytest.mark.e2e, pytest.mark.postgres, pytest.mark.slow]
SHARED = [f"shared-{i}" for i in range(4)]
UNAVAILABLE = {500, 503}


@pytest.fixture
def postgres() -> Iterator[PrivatePostgres]:
    server = PrivatePostgres()
    yield server
    server.close()


def test_postgres_crash_under_load(postgres: PrivatePostgres, tmp_path: Path,
                                   rebuilt: Rebuild) -> None:
    serve = ServerProcess(tmp_path, env={"CS_WORKERS": "projections,query-index",
                                         "CS_READ_WAIT_SECONDS": "2"})
    serve.env["CS_DATABASE_URL"] = postgres.url
    serve.start()
    try:
        with httpx.Client(base_url=serve.url, headers=SUBJECT) as http:
            for name in SHARED:
                assert http.post("/v1/contexts", json=context_body(name)).status_code == 201
        burst = Burst(serve.url, "pg", SHARED, clients=16, read_every=3).start()
        for _ in range(2):
            time.sleep(1.0)
            postgres.crash()
            time.sleep(1.0)
            postgres.start()
        recovered = _eventually_written(serve.url)
        time.sleep(0.5)
        burst.stop()
        assert serve.proc is not None and serve.proc.poll() is None, "serve died"
    finally:
        serve.kill()

    statuses = {w.status for w in burst.writes} | {s for _, s, _ in burst.reads}
    wrong = [w for w in burst.writes
             if w.status is not None and not w.acknowledged and w.status not in UNAVAILABLE]
    wrong_reads = [r for r in burst.reads if r[1] not in {200, None, *UNAVAILABLE}]
    assert wrong == [] and wrong_reads == [], (wrong[:5], wrong_reads[:5])
    assert UNAVAILABLE & statuses, "the crashes should have been seen by some client"
    assert recovered < 30

    inspector = bootstrap.build(Settings(data_dir=tmp_path, kube_mode="off"), url=postgres.url,
                                pool_size=2)
    try:
        for runner in inspector.runners.values():
            runner.catch_up()
        caught_up(inspector)
        definite = [w for w in burst.writes if w.status not in UNAVAILABLE]  # 5xx: unknown
        assert check_log(definite, log_markers(inspector.store)) == []
        assert differences(snapshot(inspector), rebuilt(inspector)) == {}
    finally:
        inspector.close()


def _eventually_written(url: str, timeout: float = 30) -> float:
    """Seconds until a new create succeeds and reads back, once the database is back."""
    started = time.monotonic()
    last = ""
    with httpx.Client(base_url=url, headers=SUBJECT, timeout=15) as http:
        for attempt in range(10_000):
            name = f"after-{attempt}"
            try:
                created = http.post("/v1/contexts", json=context_body(name))
                last = f"create {created.status_code} {created.text[:200]}"
                if created.status_code == 201:
                    read = http.get(f"/v1/namespaces/faults/contexts/{name}")
                    last = f"read {read.status_code} {read.text[:200]}"
                    if read.status_code == 200:
                        return time.monotonic() - started
            except httpx.HTTPError as exc:
                last = repr(exc)
            assert time.monotonic() - started < timeout, f"the service did not recover: {last}"
            time.sleep(0.1)
    raise AssertionError("unreachable")

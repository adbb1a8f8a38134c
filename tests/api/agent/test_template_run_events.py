"""Every run is an event (issue 12): a ``QueryTemplateRun`` whatever the outcome, shown by the
exported history and on NATS with the parameters' hash, never their values or the SQL."""

from __future__ import annotations

import io
import json

import pytest

from context_service import bootstrap
from context_service.adapters.eventstore.export import export
from context_service.adapters.nats.stream import StreamSpec
from tests.api.agent.packs_support import settings as settings  # the fixture
from tests.api.agent.templates_support import approve, registered, run, runner, seeded
from tests.api.conftest import Api
from tests.support.nats_fixtures import NatsServerHandle, relay_log

pytestmark = pytest.mark.postgres
VALUES = {"ok": "never-shown-ok", "failed": "never-shown-failed",
          "timeout": "never-shown-timeout"}


def test_runs_of_every_outcome_reach_the_export_and_nats_without_values(
        api: Api, container: bootstrap.Container, nats_server: NatsServerHandle,
        nats_stream: StreamSpec) -> None:
    seeded(api)
    text = [{"name": "v", "type": "text"}]
    registered(api, "ok", "SELECT count(*) AS n FROM passages WHERE record_id = :v", text)
    registered(api, "failed", "SELECT (:v)::int AS n FROM passages", text)  # 22P02
    registered(api, "timeout", "SELECT count(*) AS n FROM generate_series(1, 10000000000) g"
                               " WHERE :v IS NOT NULL", text, timeoutMs=200)  # busy 200 ms
    approve(api, list(VALUES))
    agent = runner(api)
    statuses = {t: run(agent, t, {"v": v}).status_code for t, v in VALUES.items()}
    assert statuses == {"ok": 200, "failed": 400, "timeout": 504}

    out = io.BytesIO()
    export(container.store, out)
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    runs = [line for line in lines if "QueryTemplateRun" in json.dumps(line)]
    assert len(runs) == 3
    published = [m for m in relay_log(container.store, nats_server.url, nats_stream)
                 if m.subject.endswith(".query_run.QueryTemplateRun")]
    outcomes = {json.loads(m.payload)["data"]["template_id"]:
                json.loads(m.payload)["data"]["outcome"] for m in published}
    assert outcomes == {"ok": "ok", "failed": "failed", "timeout": "timeout"}
    exported = out.getvalue()
    for value in VALUES.values():
        assert value.encode() not in exported
        assert all(value.encode() not in m.payload for m in published)
    # the registration events carry the SQL (administrators see it); a run's never does
    for needle in ("SELECT", "generate_series"):
        assert all(needle not in json.dumps(line) for line in runs)
        assert all(needle.encode() not in m.payload for m in published)

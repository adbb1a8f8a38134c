"""``POST /api/agent/v1/query-templates/run`` (spec 11.4) on a service of the test's own: the
NATS stream carrying a run without its parameter values, relayed from the whole log. The other
run tests share one service (test_template_run.py)."""

from __future__ import annotations

import hashlib
import json

import pytest

from context_service import bootstrap
from context_service.adapters.nats.stream import StreamSpec
from tests.api.agent.packs_support import settings as settings  # the fixture
from tests.api.agent.templates_support import approve, registered, run, runner, seeded
from tests.api.conftest import Api
from tests.support.nats_fixtures import NatsServerHandle, relay_log

pytestmark = pytest.mark.postgres
PASSAGES = ("SELECT collection_id, record_id, ordinal, title FROM passages"
            " WHERE collection_id = coalesce(:collection, collection_id)"
            " ORDER BY collection_id, ordinal")


@pytest.fixture
def corpus(api: Api) -> Api:
    seeded(api)
    registered(api, "passages", PASSAGES,
               [{"name": "collection", "type": "text"}])
    approve(api, ["passages"])
    return api


def test_nats_carries_the_run_without_parameter_values(
        corpus: Api, container: bootstrap.Container, nats_server: NatsServerHandle,
        nats_stream: StreamSpec) -> None:
    agent = runner(corpus)
    assert run(agent, "passages", {"collection": "value-never-published"}).status_code == 200
    published = [m for m in relay_log(container.store, nats_server.url, nats_stream)
                 if ".query_run." in m.subject]
    assert [m.subject for m in published] == [
        f"{nats_stream.subject_prefix}.acme.query_run.QueryTemplateRun"]
    data = json.loads(published[0].payload)["data"]
    assert list(data) == ["run_id", "template_id", "template_version", "context_set_id",
                          "credential_id", "created_by", "parameters_sha256", "outcome",
                          "sqlstate", "row_count", "truncated", "duration_ms"]
    assert data["parameters_sha256"] == hashlib.sha256(
        b'{"collection":"value-never-published"}').hexdigest()
    assert b"value-never-published" not in published[0].payload
    assert b"SELECT" not in published[0].payload

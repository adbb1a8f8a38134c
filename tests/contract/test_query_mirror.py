"""The optional ConfigMap mirror of query indexes against the real kube-apiserver."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from context_service.adapters.eventstore.outbox import TrackedPosition
from context_service.adapters.kubernetes.cluster import KubernetesCluster
from context_service.adapters.kubernetes.query_mirror import QueryMirror
from context_service.adapters.kubernetes.rest import CONFIG_MAPS, Rest
from context_service.bootstrap import Container
from context_service.domain.cluster import query_mirror_name
from context_service.domain.context import commands as c
from context_service.domain.context.events import QueryRecord
from context_service.domain.events import ADMIN

pytestmark = [pytest.mark.k8s, pytest.mark.postgres]
REV = "cd" * 32


def test_mirror_follows_publications_and_deletion(idle_container: Container,
                                                  kube_cluster: KubernetesCluster,
                                                  kube_rest: Rest, kube_ns: str) -> None:
    app = idle_container.contexts
    app.execute(kube_ns, "notes", c.CreateContext(
        actor=ADMIN, name="notes", namespace=kube_ns, type="knowledge", backend="pvc",
        size="1Gi", access_mode="ReadWriteOnce"))
    app.execute(kube_ns, "notes", c.PublishRevision(
        actor=ADMIN, id=REV, operation="sync", created_at=datetime(2026, 1, 1, tzinfo=UTC)))
    record = QueryRecord(id="r1", context="notes", type="knowledge", revision=REV,
                         text="release schedule", title="Release")
    app.execute(kube_ns, "notes", c.PublishQueryIndex(actor=ADMIN, revision=REV,
                                                      records=(record,)))
    mirror = QueryMirror(kube_cluster, idle_container.store,
                         TrackedPosition(idle_container.tracking, "query-mirror"))
    assert mirror.run_once() == 3
    path = CONFIG_MAPS.path(kube_ns, query_mirror_name("notes"))
    config_map = kube_rest.get(path)
    assert config_map["metadata"]["annotations"][
        "context.rossoctl.io/query-index-revision"] == REV
    index = json.loads(config_map["data"]["index.json"])
    assert index == {"revision": REV, "records": [
        {"id": "r1", "context": "notes", "type": "knowledge", "revision": REV,
         "title": "Release", "text": "release schedule",
         "source": {"context": "", "type": "", "revision": ""}}]}
    assert mirror.run_once() == 0  # the checkpoint moved

    app.execute(kube_ns, "notes", c.DeleteContext(actor=ADMIN, force=True))
    assert mirror.run_once() == 1
    assert kube_cluster.delete_query_mirror(kube_ns, "notes") is False  # already gone

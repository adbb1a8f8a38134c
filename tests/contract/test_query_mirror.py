"""The optional ConfigMap mirror of query indexes against the real kube-apiserver."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from context_service.adapters.eventstore.indexes import index_records
from context_service.adapters.eventstore.outbox import TrackedPosition
from context_service.adapters.kubernetes.cluster import KubernetesCluster
from context_service.adapters.kubernetes.query_mirror import QueryMirror
from context_service.adapters.kubernetes.rest import CONFIG_MAPS, Rest
from context_service.bootstrap import Container
from context_service.domain.cluster import query_mirror_name
from context_service.domain.context import commands as c
from context_service.domain.context.events import FieldSpan, QueryRecord, RecordField
from context_service.domain.context.index_upload import UploadPart
from context_service.domain.events import ADMIN

pytestmark = [pytest.mark.k8s, pytest.mark.postgres]
REV = "cd" * 32


def _mirror(container: Container, cluster: KubernetesCluster) -> QueryMirror:
    store = container.store
    return QueryMirror(cluster, store, TrackedPosition(container.tracking, "query-mirror"),
                       lambda stream_id, position: index_records(store, stream_id, position))


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
    mirror = _mirror(idle_container, kube_cluster)
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


def test_mirror_holds_extended_records_of_a_multi_part_upload_once_complete(
        idle_container: Container, kube_cluster: KubernetesCluster, kube_rest: Rest,
        kube_ns: str) -> None:
    app = idle_container.contexts
    app.execute(kube_ns, "facts", c.CreateContext(
        actor=ADMIN, name="facts", namespace=kube_ns, type="knowledge", backend="pvc",
        size="1Gi", access_mode="ReadWriteOnce"))
    app.execute(kube_ns, "facts", c.PublishRevision(
        actor=ADMIN, id=REV, operation="sync", created_at=datetime(2026, 1, 1, tzinfo=UTC)))
    first = QueryRecord(id="cfo", context="facts", type="knowledge", revision=REV,
                        text="Dana is CFO", valid_from=datetime(2026, 2, 1, tzinfo=UTC),
                        supersedes=("cfo-old",), fact_key="officer/cfo",
                        fields=(RecordField("holder", "text", "Dana", FieldSpan(0, 4)),
                                RecordField("pay", "money",
                                            {"currency": "USD", "amount": "1.50"})))
    second = QueryRecord(id="cfo-old", context="facts", type="knowledge", revision=REV,
                         text="Sam was CFO")
    app.execute(kube_ns, "facts", c.PublishQueryIndex(
        actor=ADMIN, revision=REV, records=(second,), upload=UploadPart("up", 2, 2)))
    mirror = _mirror(idle_container, kube_cluster)
    mirror.run_once()
    path = CONFIG_MAPS.path(kube_ns, query_mirror_name("facts"))
    assert kube_rest.find(path) is None  # an incomplete upload never shows
    app.execute(kube_ns, "facts", c.PublishQueryIndex(
        actor=ADMIN, revision=REV, records=(first,), upload=UploadPart("up", 1, 2)))
    mirror.run_once()
    text = kube_rest.get(path)["data"]["index.json"]
    assert text == json.dumps({"revision": REV, "records": [
        {"id": "cfo", "context": "facts", "type": "knowledge", "revision": REV,
         "text": "Dana is CFO", "source": {"context": "", "type": "", "revision": ""},
         "validFrom": "2026-02-01T00:00:00Z", "supersedes": ["cfo-old"],
         "factKey": "officer/cfo", "fields": [
             {"name": "holder", "type": "text", "value": "Dana",
              "span": {"start": 0, "end": 4}},
             {"name": "pay", "type": "money", "value": {"amount": "1.50", "currency": "USD"}}]},
        {"id": "cfo-old", "context": "facts", "type": "knowledge", "revision": REV,
         "text": "Sam was CFO", "source": {"context": "", "type": "", "revision": ""}}]},
        separators=(",", ":"), ensure_ascii=False)

    # An index larger than a ConfigMap can hold removes the mirror instead of leaving it stale.
    big = tuple(QueryRecord(id=f"r{i}", context="facts", type="knowledge", revision=REV,
                            text="x" * 2000) for i in range(600))
    app.execute(kube_ns, "facts", c.PublishQueryIndex(actor=ADMIN, revision=REV, records=big))
    mirror.run_once()
    assert kube_rest.find(path) is None

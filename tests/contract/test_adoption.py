"""Adoption against the real kube-apiserver: labelled context PVCs (with their annotations and
VolumeSnapshots) and pool objects are imported once as events; a second run skips them."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from litestar.testing import TestClient

from context_service import bootstrap
from context_service.adapters.eventstore.adoption import adopt
from context_service.adapters.kubernetes.cluster import SANDBOX, KubernetesCluster
from context_service.adapters.kubernetes.rest import CONFIG_MAPS, PVCS, Rest
from context_service.devcluster.devsim import DevSimulator
from context_service.domain.cluster import (
    MAX_SNAPSHOT_ERROR,
    ContextSnapshot,
    query_mirror_name,
    snapshot_object_name,
)

pytestmark = [pytest.mark.k8s, pytest.mark.postgres]
P = "context.rossoctl.io/"
DIGEST = "ab" * 32


def _pvc(rest: Rest, ns: str, name: str, annotations: dict[str, str],
         labels: dict[str, str] | None = None) -> None:
    labels = labels if labels is not None else {
        "app.kubernetes.io/managed-by": "context-service", P + "name": name, P + "type": "memory"}
    rest.create(PVCS.path(ns), {
        "apiVersion": "v1", "kind": "PersistentVolumeClaim",
        "metadata": {"name": f"context-{name}", "labels": labels, "annotations": annotations},
        "spec": {"accessModes": ["ReadWriteMany"], "resources": {"requests": {"storage": "1024Mi"}},
                 "storageClassName": "fast"}}, "test")


@pytest.fixture
def client(idle_container: bootstrap.Container) -> Iterator[TestClient[Any]]:
    idle_container.start_workers(("projections", "query-index"))
    with TestClient(app=bootstrap.app(idle_container)) as test_client:
        yield test_client


def test_context_claims_are_imported_once_with_their_history(
        idle_container: bootstrap.Container, client: TestClient[Any],
        kube_cluster: KubernetesCluster, kube_rest: Rest, kube_ns: str) -> None:
    grants = [{"subject": {"kind": "user", "name": "alice"},
               "permissions": ["read", "write", "attach", "derive", "administer"],
               "createdAt": "2026-03-01T09:00:00Z"}]
    audit = [{"time": "2026-03-01T09:00:00Z", "action": "context.created",
              "subject": {"kind": "user", "name": "alice"}},
             {"time": "2026-03-01T09:05:00Z", "action": "grant.set",
              "subject": {"kind": "user", "name": "alice"},
              "target": {"kind": "agent", "name": "bot"}}]
    revisions = [{"id": DIGEST, "createdAt": "2026-03-02T00:00:00Z", "operation": "sync",
                  "files": 2, "bytes": 10}]
    _pvc(kube_rest, kube_ns, "notes", {
        P + "access-grants": json.dumps(grants), P + "audit-events": json.dumps(audit),
        P + "revisions": json.dumps(revisions), P + "current-revision": DIGEST})
    _pvc(kube_rest, kube_ns, "open", {})
    record = {"id": "r1", "context": "notes", "type": "memory", "revision": DIGEST,
              "text": "release schedule", "source": {"context": "", "type": "", "revision": ""},
              "validFrom": "2026-02-01T00:00:00Z", "validTo": "2027-02-01T00:00:00.5Z",
              "supersedes": ["r0"], "factKey": "release/cadence",
              "fields": [{"name": "weekday", "type": "text", "value": "Friday",
                          "span": {"start": 0, "end": 7}}]}
    kube_rest.create(CONFIG_MAPS.path(kube_ns), {
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": query_mirror_name("notes"),
                     "labels": {"app.kubernetes.io/managed-by": "context-service"}},
        "data": {"index.json": json.dumps({"revision": DIGEST, "records": [record]})}}, "test")
    _pvc(kube_rest, kube_ns, "closed", {P + "access-grants": "[]"})
    _pvc(kube_rest, kube_ns, "stray", {}, labels={P + "name": "stray"})  # not managed by us

    report = adopt(kube_cluster, idle_container.store, kube_ns)
    mine = sorted(c for c in report.contexts if c.startswith(kube_ns + "/"))
    assert mine == [f"{kube_ns}/closed", f"{kube_ns}/notes", f"{kube_ns}/open"]

    base = f"/v1/namespaces/{kube_ns}/contexts"
    alice = {"X-Context-Subject": "user:alice"}
    notes = client.get(base + "/notes", headers=alice).json()
    assert notes["storage"] == {"backend": "pvc", "size": "1Gi", "accessMode": "ReadWriteMany",
                                "storageClass": "fast"}
    assert notes["currentRevision"] == DIGEST
    assert [r["id"] for r in notes["revisions"]] == [DIGEST]
    got_audit = client.get(base + "/notes/audit", headers=alice).json()["items"]
    assert [(a["time"], a["action"]) for a in got_audit] == [
        ("2026-03-01T09:00:00Z", "context.created"), ("2026-03-01T09:05:00Z", "grant.set")]
    page = client.get(base + "/notes/audit?limit=1", headers=alice).json()
    rest = client.get(base + "/notes/audit?limit=1&cursor=" + page["nextCursor"],
                      headers=alice).json()
    assert [a["action"] for a in page["items"] + rest["items"]] == ["context.created",
                                                                   "grant.set"]
    found = client.post(f"/v1/namespaces/{kube_ns}/query", headers=alice,
                        json={"contexts": ["notes"], "query": "release"}).json()
    assert [(i["score"], i["record"]) for i in found["items"]] == [(1, record)], found
    assert client.get(base + "/open").status_code == 200  # no annotation: user:anonymous
    assert client.get(base + "/closed").status_code == 404  # "[]": nobody
    assert client.get(base + "/stray").status_code == 404

    again = adopt(kube_cluster, idle_container.store, kube_ns)
    assert not [c for c in again.contexts if c.startswith(kube_ns + "/")]
    assert f"{kube_ns}/notes" in again.skipped


def test_pool_objects_are_grouped_into_adopted_pools(
        idle_container: bootstrap.Container, client: TestClient[Any],
        kube_cluster: KubernetesCluster, kube_rest: Rest, kube_ns: str) -> None:
    labels = {"app.kubernetes.io/managed-by": "context-service", P + "pool": "docs"}
    for i in range(2):
        kube_rest.create(SANDBOX.path(kube_ns), {
            "apiVersion": "agents.x-k8s.io/v1beta1", "kind": "Sandbox",
            "metadata": {"name": f"sandbox-docs-{i}", "labels": labels,
                         "annotations": {P + "replicas": "2",
                                         P + "workspace-read-only": "false"}},
            "spec": {"podTemplate": {"spec": {"containers": [{"name": "c", "image": "x"}]}}}},
            "test")
    kube_rest.create(PVCS.path(kube_ns), {
        "apiVersion": "v1", "kind": "PersistentVolumeClaim",
        "metadata": {"name": "docs-workspace", "labels": {**labels, P + "replicas": "2"}},
        "spec": {"accessModes": ["ReadWriteMany"], "resources": {"requests": {"storage": "2Gi"}}}},
        "test")
    kube_rest.create(PVCS.path(kube_ns), {
        "apiVersion": "v1", "kind": "PersistentVolumeClaim",
        "metadata": {"name": "broken-workspace", "labels": {**labels, P + "pool": "broken"}},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}},
        "test")
    report = adopt(kube_cluster, idle_container.store, kube_ns)
    assert report.pools == ["docs"]
    assert any(line.startswith("pool broken:") for line in report.not_imported)
    pool = client.get("/v1/sandbox-pools/docs").json()
    assert (pool["replicas"], pool["workspace"]) == (2, {"size": "2Gi",
                                                         "accessMode": "ReadWriteMany"})
    assert adopt(kube_cluster, idle_container.store, kube_ns).pools == []


def test_an_object_the_log_cannot_hold_is_reported_and_the_others_adopted(
        idle_container: bootstrap.Container, client: TestClient[Any],
        kube_cluster: KubernetesCluster, kube_rest: Rest, kube_sim: DevSimulator,
        kube_ns: str) -> None:
    """Adoption runs at every start: a driver's error of 1.1 MB with U+0000 in a VolumeSnapshot's
    status is adopted cleaned and cut (it made the whole import fail: event too large), and a
    snapshot label holding U+0000 (PostgreSQL text cannot store it: every view would be held at
    the event) leaves that context out, reported, while the others are adopted."""
    for name in ("failing", "labelled", "plain"):
        _pvc(kube_rest, kube_ns, name, {})
    for context, labels in (("failing", {}), ("labelled", {"k": "a\x00b"})):
        assert kube_cluster.ensure_snapshot(ContextSnapshot(
            namespace=kube_ns, context=context, snapshot="s1", type="memory",
            snapshot_class="snap", size="1Gi", access_mode="ReadWriteMany", storage_class="fast",
            user_labels=labels))
    kube_sim.fail_snapshot(kube_ns, snapshot_object_name("failing", "s1"),
                           "quota\x00exceeded " + "x" * 1_100_000)

    report = adopt(kube_cluster, idle_container.store, kube_ns)
    mine = sorted(c for c in report.contexts if c.startswith(kube_ns + "/"))
    assert mine == [f"{kube_ns}/failing", f"{kube_ns}/plain"]
    assert [n for n in report.not_imported if n.startswith(f"{kube_ns}/labelled")] == [
        f"{kube_ns}/labelled: an annotation or mirrored record holds U+0000"]
    base = f"/v1/namespaces/{kube_ns}/contexts"
    [snapshot] = client.get(base + "/failing/snapshots").json()["items"]
    assert snapshot["status"] == "failed"
    assert snapshot["error"].startswith("quota\ufffdexceeded xxx")
    assert len(snapshot["error"]) == MAX_SNAPSHOT_ERROR
    assert client.get(base + "/plain").status_code == 200

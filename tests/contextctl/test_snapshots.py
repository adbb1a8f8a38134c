"""``contextctl snapshot`` against a service reconciling a real kube-apiserver with a CSI
storage class and snapshot class, the development stand-in binding PVCs and readying
VolumeSnapshots."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from context_service.adapters.kubernetes.cluster import SNAPSHOT_CLASS, KubernetesCluster
from context_service.adapters.kubernetes.rest import STORAGE_CLASSES
from context_service.devcluster.controlplane import ControlPlane
from context_service.devcluster.devsim import DevSimulator
from tests.contextctl.conftest import Cli, kube_service, make_cli
from tests.contextctl.normalise import normalise
from tests.e2e.server import ServerProcess
from tests.support.pool_fixtures import eventually

pytestmark = [pytest.mark.e2e, pytest.mark.postgres, pytest.mark.k8s]
NAMESPACE = "ctl-snap"
DRIVER = "ctl-snap.csi.test"
NS = ("-n", NAMESPACE)
REV = "5e" * 32


@pytest.fixture(scope="module")
def service(module_dir: Path, module_database_url: str, plane: ControlPlane,
            kube: KubernetesCluster) -> Iterator[ServerProcess]:
    kube.rest.create(STORAGE_CLASSES.path(), {
        "apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
        "metadata": {"name": "ctl-snap-sc"}, "provisioner": DRIVER}, "test")
    kube.rest.create(SNAPSHOT_CLASS.path(), {
        "apiVersion": "snapshot.storage.k8s.io/v1", "kind": "VolumeSnapshotClass",
        "metadata": {"name": "ctl-snap-vsc"}, "driver": DRIVER, "deletionPolicy": "Delete"},
        "test")
    proc = kube_service(module_dir, module_database_url, plane, kube, NAMESPACE)
    sim = DevSimulator(kube.rest, NAMESPACE).start(interval=0.3)
    yield proc
    sim.stop()
    proc.cleanup()
    kube.rest.delete(SNAPSHOT_CLASS.path(None, "ctl-snap-vsc"))
    kube.rest.delete(STORAGE_CLASSES.path(None, "ctl-snap-sc"))


@pytest.fixture
def cli(service: ServerProcess, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> Cli:
    return make_cli(service.url, monkeypatch, capsys)


def ready_context(cli: Cli, name: str, tmp_path: Path) -> None:
    assert cli("ctx", "create", name, "--type", "memory", "--storage-class", "ctl-snap-sc",
               *NS).code == 0
    revision = tmp_path / "rev.json"
    revision.write_text(json.dumps({"id": REV, "createdAt": "2026-03-01T09:00:00Z",
                                    "operation": "sync"}))
    assert cli("ctx", "publish", name, str(revision), *NS).code == 0
    eventually(lambda: "Status:              ready" in cli("ctx", "get", name, *NS).out,
               timeout=30)


def snapshot_status(cli: Cli, context: str, snapshot: str) -> str:
    status: str = json.loads(cli("snapshot", "get", context, snapshot, "--json", *NS).out)[
        "status"]
    return status


def test_snapshot_clone_restore_capabilities(cli: Cli, tmp_path: Path) -> None:
    ready_context(cli, "mem", tmp_path)
    capabilities = cli("snapshot", "capabilities", "mem", *NS)
    assert capabilities.out == (
        "Capabilities\n"
        "  Snapshots:      true\n"
        "  Clones:         true\n"
        "  Restore:        false\n"
        f"  Driver:         {DRIVER}\n"
        "  Snapshot class: ctl-snap-vsc\n"
        "  Reason:         restore requires cloning into a new context\n")
    made = cli("snapshot", "create", "mem", "first", "--label", "team=docs", *NS)
    assert made.code == 0, made.err
    assert normalise(made.out, columns=False) == (
        "Snapshot\n"
        "  Name:           first\n"
        f"  Context:        {NAMESPACE}/mem\n"
        "  Status:         creating\n"
        f"  Revision:       {REV}\n"
        "  VolumeSnapshot: context-mem-first\n"
        "  Snapshot class: ctl-snap-vsc\n"
        "  Source claim:   context-mem\n"
        "  Created:        <TIME>\n"
        "  Protected:      false\n"
        "  Labels:         team=docs\n")
    eventually(lambda: snapshot_status(cli, "mem", "first") == "ready", timeout=30)
    listed = cli("snapshot", "ls", "mem", *NS)
    assert normalise(listed.out) == (
        "NAME  STATUS  REVISION  CLASS  CREATED  PROTECTED  ERROR\n"
        f"first  ready  {REV[:12]}  ctl-snap-vsc  <TIME>  false\n")
    again = cli("snapshot", "create", "mem", "first", *NS)
    assert (again.code, again.err) == (1, "contextctl: context resource already exists\n")
    cloned = cli("snapshot", "clone", "mem", "first", "mem-copy", *NS)
    assert (cloned.code, cloned.out) == (0, "cloned mem/first into mem-copy\n")
    copy = json.loads(cli("ctx", "get", "mem-copy", "--json", *NS).out)
    assert (copy["type"], copy["currentRevision"]) == ("memory", REV)
    restored = cli("snapshot", "restore", "mem", "first", *NS)
    assert restored.code == 1
    assert restored.err == (
        "contextctl: context lifecycle operation is not supported by this storage backend: CSI "
        "cannot replace an existing PVC atomically; clone the snapshot into a new context\n")
    missing = cli("snapshot", "get", "mem", "nope", *NS)
    assert missing.err == "contextctl: context resource not found\n"


def test_retention_and_gc(cli: Cli, tmp_path: Path) -> None:
    ready_context(cli, "kept", tmp_path)
    assert cli("snapshot", "create", "kept", "pinned", "--protected", *NS).code == 0
    for name in ("s1", "s2", "s3"):
        assert cli("snapshot", "create", "kept", name, *NS).code == 0
    for name in ("s1", "s2", "s3", "pinned"):
        eventually(lambda n=name: snapshot_status(cli, "kept", n) == "ready", timeout=30)
    policy = cli("snapshot", "retention", "kept", "--keep-last", "1", "--max-age", "0", *NS)
    assert (policy.code, policy.out) == (0, "retention of kept: keep last 1, max age 0\n")
    dry = cli("snapshot", "gc", "kept", "--dry-run", *NS)
    rows = [line.split("  ")[:2] for line in normalise(dry.out).splitlines()[1:]]
    assert sorted(rows) == [["kept", "pinned"], ["kept", "s3"], ["would delete", "s1"],
                            ["would delete", "s2"]]
    done = json.loads(cli("snapshot", "gc", "kept", "--json", *NS).out)
    assert (done["dryRun"], sorted(s["name"] for s in done["deleted"])) == (False, ["s1", "s2"])
    assert [line.split()[0] for line in cli("snapshot", "ls", "kept", *NS).out.splitlines()[1:]
            ] == ["pinned", "s3"]
    bad = cli("snapshot", "retention", "kept", "--keep-last", "-1", *NS)
    assert bad.err == "contextctl: invalid context resource: keepLast cannot be negative\n"
    forgotten = cli("snapshot", "retention", "kept", *NS)  # no option never clears the policy
    assert forgotten.code == 2 and "or --clear to remove the policy" in forgotten.err
    both = cli("snapshot", "retention", "kept", "--clear", "--keep-last", "1", *NS)
    assert both.code == 2 and "give it without --keep-last" in both.err
    cleared = cli("snapshot", "retention", "kept", "--clear", *NS)
    assert (cleared.code, cleared.out) == (0, "retention of kept: cleared\n")
    assert cli("snapshot", "create", "kept", "s4", *NS).code == 0
    eventually(lambda: snapshot_status(cli, "kept", "s4") == "ready", timeout=30)
    kept_all = json.loads(cli("snapshot", "gc", "kept", "--dry-run", "--json", *NS).out)
    assert sorted(s["name"] for s in kept_all["kept"]) == ["pinned", "s3", "s4"]
    assert "deleted" not in kept_all  # keep-last 1 would have deleted s3
    label = cli("snapshot", "create", "kept", "x", "--label", "novalue", *NS)
    assert label.code == 2 and "'novalue' is not key=value" in label.err

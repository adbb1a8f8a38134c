"""SIGKILL of the reconciler between the two steps of a context's deletion: the deletion is
recorded (the API answered 204) and the request deleting the PVC, held by a proxy in front of the
kube-apiserver, never arrives. Until the reconciler runs again the old PVC stays, and the name,
free in the log, is refused to a new context (409, the claim name is taken) rather than handing
it the deleted context's PVC and data; once the reconciler is back it deletes the PVC, and a new
context of that name gets a new one.

The API replica (``serve``, projections) talks to the apiserver directly; the reconciler (``worker
reconciler``, as deployed) through the proxy. The apiserver is this test's own: ``serve`` adopts
labelled objects of the whole cluster at start."""

from __future__ import annotations

import contextlib
import functools
import json
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from context_service import bootstrap
from context_service.adapters.kubernetes.cluster import KubernetesCluster
from context_service.devcluster.controlplane import ControlPlane
from context_service.domain.cluster import SNAPSHOT_LABEL, ClaimInfo
from context_service.domain.context import commands as cmd
from context_service.domain.context.events import (
    ClaimObserved,
    ContextCreated,
    SnapshotObjectDeleted,
)
from context_service.domain.events import Subject
from context_service.domain.stream import context_stream
from tests.e2e.server import ServerProcess
from tests.faults.conftest import Rebuild, caught_up
from tests.faults.crash_cluster import cluster_in
from tests.support.pool_fixtures import eventually
from tests.support.views import differences, snapshot

pytestmark = [pytest.mark.e2e, pytest.mark.postgres, pytest.mark.k8s]
NS = "crash-claims"
NAME = "notes"
CLAIM = f"context-{NAME}"
CONTEXTS = f"/v1/namespaces/{NS}/contexts"


class HoldingProxy:
    """A TCP proxy in front of the apiserver. ``hold()``: what clients send from now on is kept
    back (their requests hang, as in front of a stalled server); ``drop()``: every connection is
    closed and what was kept back is thrown away (never reaches the server); new connections
    pass again."""

    def __init__(self, upstream: tuple[str, int]) -> None:
        self.upstream = upstream
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self.listener.getsockname()[1]
        self.held = threading.Event()
        self._open: list[socket.socket] = []
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            server = socket.create_connection(self.upstream)
            with self._lock:
                self._open += [client, server]
            threading.Thread(target=self._pump, args=(client, server, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(server, client, False),
                             daemon=True).start()

    def _pump(self, source: socket.socket, target: socket.socket, outbound: bool) -> None:
        try:
            while data := source.recv(65536):
                if not (outbound and self.held.is_set()):
                    target.sendall(data)
        except OSError:
            pass
        for end in (source, target):
            with contextlib.suppress(OSError):
                end.shutdown(socket.SHUT_RDWR)

    def hold(self) -> None:
        self.held.set()

    def drop(self) -> None:
        with self._lock:
            ends, self._open = self._open, []
        for end in ends:
            with contextlib.suppress(OSError):
                end.shutdown(socket.SHUT_RDWR)
            end.close()
        self.held.clear()

    def close(self) -> None:
        self.listener.close()
        self.drop()


@pytest.fixture
def cluster(plane: ControlPlane) -> Iterator[KubernetesCluster]:
    with cluster_in(plane, NS) as found:
        yield found


@pytest.fixture
def proxy(plane: ControlPlane) -> Iterator[HoldingProxy]:
    made = HoldingProxy(("127.0.0.1", plane.ports.api))
    yield made
    made.close()


def _processes(tmp_path: Path, plane: ControlPlane, proxy: HoldingProxy, database_url: str,
               worker: str) -> tuple[ServerProcess, ServerProcess]:
    """The API replica (``serve`` with the projections, straight to the apiserver) and
    ``worker NAME`` (through the proxy)."""
    config = json.loads(plane.kubeconfig.read_text())
    config["clusters"][0]["cluster"]["server"] = f"https://127.0.0.1:{proxy.port}"
    proxied = tmp_path / "kubeconfig-proxied"
    proxied.write_text(json.dumps(config))
    made = []
    for name, kubeconfig, command, workers in (
            ("api", plane.kubeconfig, ("serve",), "projections,query-index"),
            (worker, proxied, ("worker", worker), "")):
        (tmp_path / name).mkdir()
        proc = ServerProcess(tmp_path / name, command=command, log_name=f"{name}.log", env={
            "CS_KUBE": "kubeconfig", "KUBECONFIG": str(kubeconfig), "CS_NAMESPACE": NS,
            "CS_WORKERS": workers,
            # the ConfigMap mirror of query indexes runs beside the worker, not in the API
            "CS_MIRROR_QUERY_INDEX": "false" if name == "api" else "true"})
        proc.env["CS_DATABASE_URL"] = database_url
        made.append(proc)
    return made[0], made[1]


@pytest.fixture
def processes(tmp_path: Path, plane: ControlPlane, cluster: KubernetesCluster,
              proxy: HoldingProxy, database_url: str, request: pytest.FixtureRequest
              ) -> Iterator[tuple[ServerProcess, ServerProcess]]:
    api, worker = _processes(tmp_path, plane, proxy, database_url, request.param)
    yield api, worker
    for proc in (api, worker):
        proc.cleanup()


def _start(worker: ServerProcess) -> None:
    """Start ``worker NAME``; return once it holds its lock and works."""
    line = '"reconciler active"' if worker.command[1] == "reconciler" else '"worker active"'
    worker.launch()
    worker.wait_until(lambda: worker.logged(line), 60, "did not become active")


def _context() -> dict[str, object]:
    return {"name": NAME, "namespace": NS, "type": "memory",
            "storage": {"backend": "pvc", "size": "1Gi", "accessMode": "ReadWriteOnce"}}


def _claim(cluster: KubernetesCluster) -> ClaimInfo | None:
    return cluster.get_claim(NS, CLAIM)


def _observed_since_last_create(container: bootstrap.Container) -> bool:
    """The reconciler recorded the claim of the context's latest generation."""
    events = [r.event for r in container.store.load(context_stream(NS, NAME))]
    created = max(i for i, e in enumerate(events) if isinstance(e, ContextCreated))
    return any(isinstance(e, ClaimObserved) for e in events[created + 1:])


@pytest.mark.parametrize("processes", ["reconciler"], indirect=True)
def test_a_deletion_cut_short_finishes_on_restart_and_never_hands_the_pvc_on(
        processes: tuple[ServerProcess, ServerProcess], proxy: HoldingProxy,
        cluster: KubernetesCluster, inspector: bootstrap.Container) -> None:
    api, reconciler = processes
    api.start()
    _start(reconciler)
    alice = {"X-Context-Subject": "user:alice"}
    mallory = {"X-Context-Subject": "user:mallory"}
    with httpx.Client(base_url=api.url, timeout=30) as http:
        assert http.post("/v1/contexts", json=_context(), headers=alice).status_code == 201
        eventually(lambda: _claim(cluster) is not None, timeout=30)
        first = _claim(cluster)
        assert first is not None

        proxy.hold()  # the reconciler's requests hang from now on
        assert http.delete(f"{CONTEXTS}/{NAME}", headers=alice).status_code == 204
        time.sleep(0.5)  # its pass for the deletion is sent, and held
        reconciler.kill()  # between the deletion's two steps: recorded, PVC not deleted
        proxy.drop()  # nothing it sent reaches the apiserver
        still = _claim(cluster)
        assert still is not None and still.uid == first.uid and not still.deleting

        # another user asks for the name: refused while the old PVC exists
        refused = http.post("/v1/contexts", json=_context(), headers=mallory)
        assert refused.status_code == 409, refused.text
        _start(reconciler)
        eventually(lambda: (c := _claim(cluster)) is None or c.uid != first.uid, timeout=20)
        again = http.post("/v1/contexts", json=_context(), headers=mallory)
        assert again.status_code == 201, again.text
        eventually(lambda: _observed_since_last_create(inspector), timeout=30)
        now = eventually(lambda: _claim(cluster), timeout=20)
        assert now.uid != first.uid and not now.deleting
        assert now.labels.get("context.rossoctl.io/name") == NAME


def _snapshot_objects(cluster: KubernetesCluster) -> list[tuple[str, bool]]:
    """The managed VolumeSnapshots of the namespace: (snapshot label, being deleted)."""
    return sorted((s.labels.get(SNAPSHOT_LABEL, s.name), s.deleting)
                  for s in cluster.list_snapshots(NS))


@pytest.mark.parametrize("processes", ["snapshots"], indirect=True)
def test_snapshot_steps_cut_short_finish_on_restart(
        processes: tuple[ServerProcess, ServerProcess], proxy: HoldingProxy,
        cluster: KubernetesCluster, inspector: bootstrap.Container,
        rebuilt: Rebuild) -> None:
    """The snapshot worker killed with its create of a recorded snapshot's VolumeSnapshot held,
    then with its delete of a collected one's held: started again, it creates the one (once)
    and deletes the other, and records that it did."""
    api, worker = processes
    api.start()
    _start(worker)
    alice = Subject("user", "alice")
    path = f"{CONTEXTS}/{NAME}"
    with httpx.Client(base_url=api.url, timeout=30,
                      headers={"X-Context-Subject": "user:alice"}) as http:
        assert http.post("/v1/contexts", json=_context()).status_code == 201
        record = functools.partial(inspector.contexts.execute, NS, NAME)
        record(cmd.RecordSnapshot(actor=alice, name="old", storage_class="", snapshot_class="c"))
        eventually(lambda: _snapshot_objects(cluster) == [("old", False)], timeout=30)

        proxy.hold()
        record(cmd.RecordSnapshot(actor=alice, name="new", storage_class="", snapshot_class="c"))
        time.sleep(0.5)  # the worker's create is sent, and held
        worker.kill()
        proxy.drop()
        assert _snapshot_objects(cluster) == [("old", False)]
        _start(worker)
        eventually(lambda: _snapshot_objects(cluster) == [("new", False), ("old", False)],
                   timeout=30)

        assert http.put(path + "/retention", json={"keepLast": 1}).status_code == 200
        proxy.hold()
        collected = http.post(path + "/gc")
        assert collected.status_code == 200, collected.text
        assert [s["name"] for s in collected.json()["deleted"]] == ["old"]
        time.sleep(0.5)  # the worker's delete is sent, and held
        worker.kill()
        proxy.drop()
        assert ("old", False) in _snapshot_objects(cluster)
        _start(worker)
        eventually(lambda: _snapshot_objects(cluster) == [("new", False)], timeout=30)
        listed = http.get(path + "/snapshots").json()["items"]
        assert [s["name"] for s in listed] == ["new"]

    def deletion_recorded() -> bool:
        events = [r.event for r in inspector.store.load(context_stream(NS, NAME))]
        return any(isinstance(e, SnapshotObjectDeleted) and e.name == "old" for e in events)

    eventually(deletion_recorded, timeout=30)
    caught_up(inspector)
    assert differences(snapshot(inspector), rebuilt(inspector)) == {}


def _index(http: httpx.Client, revision: str, words: str) -> None:
    path = f"{CONTEXTS}/{NAME}"
    assert http.post(path + "/revisions", json={
        "id": revision, "createdAt": "2026-05-01T10:00:00Z",
        "operation": "sync"}).status_code == 201
    records = [{"id": f"r{i}", "context": NAME, "type": "knowledge", "revision": revision,
                "text": f"{words} {i}"} for i in range(3)]
    answer = http.put(path + "/query-index", json={"revision": revision, "records": records})
    assert answer.status_code == 204, answer.text


def _mirrored(cluster: KubernetesCluster) -> str | None:
    """The revision the context's ConfigMap mirror holds (None: no mirror)."""
    text = cluster.get_query_mirror(NS, NAME)
    return None if text is None else str(json.loads(text)["revision"])


@pytest.mark.parametrize("processes", ["reconciler"], indirect=True)
def test_query_mirror_steps_cut_short_finish_on_restart(
        processes: tuple[ServerProcess, ServerProcess], proxy: HoldingProxy,
        cluster: KubernetesCluster) -> None:
    """The mirror killed with its update of a newly published index held, then with its removal
    of a deleted context's mirror held: started again it writes the current index, then removes
    the mirror (and the reconciler the PVC)."""
    api, worker = processes
    api.start()
    _start(worker)
    first, second = "1" * 64, "2" * 64
    with httpx.Client(base_url=api.url, timeout=30,
                      headers={"X-Context-Subject": "user:alice"}) as http:
        assert http.post("/v1/contexts", json=_context() | {"type": "knowledge"}
                         ).status_code == 201
        _index(http, first, "first words")
        eventually(lambda: _mirrored(cluster) == first, timeout=30)

        proxy.hold()
        _index(http, second, "second words")
        time.sleep(0.5)  # the mirror's apply is sent, and held
        worker.kill()
        proxy.drop()
        assert _mirrored(cluster) == first
        _start(worker)
        eventually(lambda: _mirrored(cluster) == second, timeout=30)
        text = cluster.get_query_mirror(NS, NAME)
        assert text is not None
        assert [r["text"] for r in json.loads(text)["records"]] == [
            f"second words {i}" for i in range(3)]

        proxy.hold()
        assert http.delete(f"{CONTEXTS}/{NAME}").status_code == 204
        time.sleep(0.5)
        worker.kill()
        proxy.drop()
        assert _mirrored(cluster) == second and _claim(cluster) is not None
        _start(worker)
        eventually(lambda: _mirrored(cluster) is None and _claim(cluster) is None, timeout=30)

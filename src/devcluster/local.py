"""The LOCAL CONTROL PLANE behind ``make run`` (CS_KUBE=local): a real etcd, kube-apiserver and
kube-controller-manager on 127.0.0.1 with data under ``$CS_DATA_DIR/kube``, our CRDs installed,
``CS_NAMESPACE`` created, a default StorageClass and VolumeSnapshotClass for a dev CSI driver, and
the development stand-in for node-side controllers (``devsim``). Data survives restarts.
"""

from __future__ import annotations

import contextlib
import json
import logging
import subprocess
import time
from importlib import resources
from pathlib import Path
from types import TracebackType
from typing import Any

import yaml
from kubernetes.client import ApiClient

from context_service.adapters import children
from context_service.adapters.kubernetes.client import close
from context_service.adapters.kubernetes.cluster import SANDBOX_TEMPLATE, SNAPSHOT_CLASS, WARM_POOL
from context_service.adapters.kubernetes.rest import (
    APPLY_PATCH,
    CRDS,
    JSON,
    NAMESPACES,
    STORAGE_CLASSES,
    Rest,
)
from context_service.config import Settings
from context_service.devcluster.controlplane import ControlPlane, Ports, stop_stale
from context_service.devcluster.devsim import DevSimulator
from context_service.domain.cluster import DEFAULT_SNAPSHOT_CLASS_ANNOTATION, ClusterError

log = logging.getLogger(__name__)

# Files of this package, read as files: the scripts run with bash.
PACKAGE_DIR = Path(str(resources.files("context_service.devcluster")))
ENSURE_SCRIPT = PACKAGE_DIR / "scripts" / "ensure-kube.sh"
CRD_DIR = PACKAGE_DIR / "crds"
DEFAULT_PORTS = Ports(api=16443, etcd=23790, peer=23791)
DEV_DRIVER = "dev.csi.local"
DEV_STORAGE_CLASS = "dev-local"
DEV_SNAPSHOT_CLASS = "dev-local-snapshots"
DEV_TEMPLATE = "dev-sandbox"
DEV_WARM_POOL = "dev-warm"
MANAGER = "context-service-dev"


def ensure_binaries(script: Path = ENSURE_SCRIPT) -> Path:
    """The directory of kube-apiserver/kube-controller-manager, built on first use (~4 min,
    progress on stderr). ``CS_KUBE_BIN_DIR`` in the environment points at prebuilt ones."""
    if not script.is_file():
        raise FileNotFoundError(f"{script} not found: the package is incomplete")
    # the build's progress on stderr reaches the terminal; the environment is a child's: the
    # script runs the package manager and a compiler
    result = subprocess.run(["bash", str(script)], check=True, stdout=subprocess.PIPE, text=True,
                            env=children.environment())
    return Path(result.stdout.strip().splitlines()[-1])


def install_crds(rest: Rest, directory: Path = CRD_DIR, timeout: float = 30.0) -> list[str]:
    """Server-side apply every ``*.yaml`` CRD in ``directory`` and wait until all are
    Established. Re-applying an unchanged file is a no-op, a changed one is updated."""
    names = []
    for path in sorted(directory.glob("*.yaml")):
        doc: JSON = yaml.safe_load(path.read_text())
        name = doc["metadata"]["name"]
        rest.patch(CRDS.path(name=name), doc, MANAGER, content_type=APPLY_PATCH)
        names.append(name)
    deadline = time.monotonic() + timeout
    for name in names:
        while not _established(rest.get(CRDS.path(name=name))):
            if time.monotonic() > deadline:
                raise TimeoutError(f"CRD {name} not Established after {timeout}s")
            time.sleep(0.05)
    return names


def _established(crd: JSON) -> bool:
    conditions = (crd.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions)


def create_if_absent(rest: Rest, path: str, body: JSON) -> bool:
    try:
        rest.create(path, body, MANAGER)
    except ClusterError as exc:
        if exc.status == 409:
            return False
        raise
    return True


def seed(rest: Rest, namespace: str, sandbox_image: str = "") -> None:
    """Namespace, default StorageClass and VolumeSnapshotClass for the dev driver, and a demo
    SandboxTemplate + SandboxWarmPool. Existing objects are left as they are."""
    create_if_absent(rest, NAMESPACES.path(), _object("v1", "Namespace", namespace))
    default = {"storageclass.kubernetes.io/is-default-class": "true"}
    storage_class = _object("storage.k8s.io/v1", "StorageClass", DEV_STORAGE_CLASS, default)
    storage_class |= {
        "provisioner": DEV_DRIVER,
        "volumeBindingMode": "Immediate",
        "reclaimPolicy": "Delete",
        "allowVolumeExpansion": True,
    }
    create_if_absent(rest, STORAGE_CLASSES.path(), storage_class)
    snapshot_default = {DEFAULT_SNAPSHOT_CLASS_ANNOTATION: "true"}
    snapshot_class = _object(
        "snapshot.storage.k8s.io/v1", "VolumeSnapshotClass", DEV_SNAPSHOT_CLASS, snapshot_default
    )
    snapshot_class |= {"driver": DEV_DRIVER, "deletionPolicy": "Delete"}
    create_if_absent(rest, SNAPSHOT_CLASS.path(), snapshot_class)
    container = {
        "name": "agent",
        "image": sandbox_image or "busybox:1.36",
        "command": ["/bin/sh", "-c", "exec sleep infinity"],
    }
    template = _object("extensions.agents.x-k8s.io/v1beta1", "SandboxTemplate", DEV_TEMPLATE)
    template["spec"] = {"podTemplate": {"spec": {"containers": [container]}}}
    create_if_absent(rest, SANDBOX_TEMPLATE.path(namespace), template)
    pool = _object("extensions.agents.x-k8s.io/v1beta1", "SandboxWarmPool", DEV_WARM_POOL)
    pool["spec"] = {"replicas": 1, "sandboxTemplateRef": {"name": DEV_TEMPLATE}}
    create_if_absent(rest, WARM_POOL.path(namespace), pool)


def _object(api_version: str, kind: str, name: str, annotations: Any = None) -> JSON:
    metadata: JSON = {"name": name}
    if annotations:
        metadata["annotations"] = annotations
    return {"apiVersion": api_version, "kind": kind, "metadata": metadata}


class LocalControlPlane:
    """etcd + kube-apiserver + kube-controller-manager (+ the dev stand-in) for development.

    ``start()`` ends processes a crashed earlier run left behind, reuses the data directory and
    its ports when they are free (16443 for the API by default), installs the CRDs, writes
    ``<work>/kubeconfig`` and seeds the cluster; ``stop()`` ends everything in reverse order."""

    def __init__(
        self,
        work: Path,
        namespace: str,
        *,
        sandbox_image: str = "",
        simulate: bool = True,
        controller_manager: bool = True,
        bin_dir: Path | None = None,
        preferred_ports: Ports = DEFAULT_PORTS,
    ) -> None:
        self.work = work.resolve()
        self.preferred_ports = preferred_ports
        self.namespace = namespace
        self.sandbox_image = sandbox_image
        self.simulate = simulate
        self.controller_manager = controller_manager
        self.bin_dir = bin_dir
        self.plane: ControlPlane | None = None
        self.simulator: DevSimulator | None = None
        self._client: ApiClient | None = None

    @property
    def kubeconfig(self) -> Path:
        return self.work / "kubeconfig"

    def start(self) -> LocalControlPlane:
        started = time.monotonic()
        bin_dir = self.bin_dir or ensure_binaries()
        self.work.mkdir(parents=True, exist_ok=True)
        stop_stale(self.work)
        plane = ControlPlane(
            bin_dir, self.work, self._ports(), controller_manager=self.controller_manager
        )
        self.plane = plane
        try:
            plane.start()
            self._client = plane.api_client()
            rest = Rest(self._client)
            install_crds(rest)  # before the controller-manager, whose GC reads discovery once
            if self.controller_manager:
                plane.start_controller_manager()
            seed(rest, self.namespace, self.sandbox_image)
            if self.simulate:
                # the real garbage collector runs when the controller-manager does
                sim = DevSimulator(rest, collect_garbage=not self.controller_manager)
                self.simulator = sim.start()
        except BaseException:
            self.stop()
            raise
        log.info(
            "local control plane ready at %s in %.1fs (kubeconfig %s)",
            plane.host,
            time.monotonic() - started,
            self.kubeconfig,
        )
        return self

    def stop(self) -> None:
        if self.simulator is not None:
            self.simulator.stop()
            self.simulator = None
        if self._client is not None:
            close(self._client)
            self._client = None
        if self.plane is not None:
            self.plane.stop()
            self.plane = None

    def api_client(self) -> ApiClient:
        """A new client for the running plane; the caller closes it."""
        if self.plane is None:
            raise RuntimeError("local control plane is not running")
        return self.plane.api_client()

    def __enter__(self) -> LocalControlPlane:
        return self.start()

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def _ports(self) -> Ports:
        """The recorded ports when still free, else the preferred ones, else any free ones."""
        record = self.work / "ports.json"
        candidates = []
        with contextlib.suppress(OSError, ValueError, TypeError):
            candidates.append(Ports(**json.loads(record.read_text())))
        candidates.append(self.preferred_ports)
        ports = next((p for p in candidates if p.all_free()), None) or Ports.pick()
        record.write_text(json.dumps({"api": ports.api, "etcd": ports.etcd, "peer": ports.peer}))
        return ports


def start_local_control_plane(settings: Settings, *, simulate: bool = True) -> LocalControlPlane:
    """Start the development control plane for ``settings`` (data in ``<CS_DATA_DIR>/kube``);
    afterwards ``client.api_client(settings, "local")`` connects to it."""
    plane = LocalControlPlane(
        settings.data_dir / "kube",
        settings.namespace,
        sandbox_image=settings.sandbox_image,
        simulate=simulate,
    )
    return plane.start()

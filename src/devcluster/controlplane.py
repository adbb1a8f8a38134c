"""Run etcd + kube-apiserver (+ kube-controller-manager) as child processes on 127.0.0.1.

The building block of the local development control plane and of the test fixtures: one work
directory holds the data, PKI, logs, child records and a kubeconfig with a verified CA and a
bearer token. By default the server authorizes everything (``authorization="RBAC"`` enforces
Roles): it must only ever listen on loopback.
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import signal
import socket
import ssl
import subprocess
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from kubernetes.client import ApiClient, Configuration

from context_service.adapters.children import Child, run_once
from context_service.adapters.children import stop_stale as stop_stale_child
from context_service.files import Replacing

log = logging.getLogger(__name__)
KCM_CONTROLLERS = "garbagecollector,namespace,pvc-protection"
# Stop order (the reverse of the start order) and how long each may take before SIGKILL: a
# kube-apiserver whose etcd is gone ignores SIGTERM, so it goes before etcd and is never waited
# on for long.
STOP_ORDER = ("controller-manager", "apiserver", "etcd")
STOP_GRACE = {"controller-manager": 5.0, "apiserver": 5.0, "etcd": 10.0}
# If this process dies first, the kernel signals each child: the stateless servers are killed
# outright (they would hang without etcd), etcd gets SIGTERM and ends cleanly.
DEATH_SIGNAL = {"controller-manager": signal.SIGKILL, "apiserver": signal.SIGKILL,
                "etcd": signal.SIGTERM}
# The beta versions a development server does not serve: every object of the project, its
# manifests and its tests is of a v1 API (or a CRD). Each version served costs the server
# storage, handlers and OpenAPI at start; together with no watch cache (a watch then reads
# etcd's, as a list does) and the Go collector run less often (GOGC 400), a server here starts
# on about 2.5 s of CPU instead of 3.75 and idles on 1.3 s a minute instead of 2.6 (measured on
# 2 cores, three starts each): the suite runs about 15 of them. One scheduler thread each (Go's
# GOMAXPROCS) takes another fifth off their idling: a development cluster serves one client.
UNSERVED_BETAS = (
    "admissionregistration.k8s.io", "apiextensions.k8s.io", "authentication.k8s.io",
    "authorization.k8s.io", "autoscaling/v2beta1", "autoscaling/v2beta2", "batch",
    "certificates.k8s.io", "coordination.k8s.io", "discovery.k8s.io", "events.k8s.io",
    "extensions", "networking.k8s.io", "node.k8s.io", "policy", "rbac.authorization.k8s.io",
    "scheduling.k8s.io", "storage.k8s.io")
APISERVER_GOGC = "400"


class ControlPlaneError(RuntimeError):
    """A control-plane process could not be started."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def port_is_free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


@dataclass(frozen=True)
class Ports:
    api: int
    etcd: int
    peer: int

    @staticmethod
    def pick() -> Ports:
        return Ports(api=free_port(), etcd=free_port(), peer=free_port())

    def all_free(self) -> bool:
        return all(port_is_free(p) for p in (self.api, self.etcd, self.peer))


def _write_private(path: Path, text: str) -> None:
    """``text`` as ``path``, readable by its owner alone from its first byte and there only
    once whole: written with the umask, then made owner-only, the API server's admin token was open
    to every local user meanwhile, and for good when a start stopped in between."""
    with Replacing(path) as written:
        os.fchmod(written.fileno(), 0o600)  # while it is still empty
        written.write(text)


def _make_key(key: Path) -> None:
    """The service-account key made beside ``key`` and moved into place once whole: openssl
    creates its output file (empty) before it generates, so one that failed, hung or was killed
    left a file every later start took for the key, never making it again."""
    making = key.with_name(f"{key.name}.making")
    try:
        made = run_once(["openssl", "genrsa", "-out", making, "2048"], timeout=120)
    except (OSError, subprocess.TimeoutExpired) as exc:  # no openssl, or it hung
        raise ControlPlaneError(
            f"openssl could not make the service-account key: {exc}") from exc
    if made.returncode != 0 or not making.is_file():
        raise ControlPlaneError(
            f"openssl could not make the service-account key ({made.returncode}):\n"
            f"{made.stderr.strip()}")
    making.replace(key)


class ControlPlane:
    """Processes over ``work``: ``start()`` runs etcd and the apiserver and waits for /readyz;
    ``start_controller_manager()`` adds the garbage collector, namespace and pvc-protection
    controllers (start it after installing CRDs); ``stop()`` ends them in reverse order."""

    def __init__(
        self,
        bin_dir: Path,
        work: Path,
        ports: Ports,
        *,
        fsync: bool = True,
        etcd: str = "etcd",
        controller_manager: bool = False,
        authorization: str = "AlwaysAllow",
    ) -> None:
        self.bin_dir = bin_dir
        # "RBAC" makes the server enforce Roles (the admin token stays in system:masters)
        self.authorization = authorization
        self.work = work.resolve()
        self.ports = ports
        self.fsync = fsync
        self.etcd_bin = etcd
        # pvc-in-use protection only makes sense when a controller removes the finalizer
        self.pvc_protection = controller_manager
        self.procs: dict[str, Child] = {}

    @property
    def host(self) -> str:
        return f"https://127.0.0.1:{self.ports.api}"

    @property
    def ca_file(self) -> Path:
        return self.work / "pki" / "apiserver.crt"

    @property
    def kubeconfig(self) -> Path:
        return self.work / "kubeconfig"

    @property
    def token(self) -> str:
        return (self.work / "pki" / "tokens.csv").read_text().split(",", 1)[0]

    def configuration(self) -> Configuration:
        cfg = Configuration()
        cfg.host = self.host
        cfg.api_key = {"authorization": f"Bearer {self.token}"}
        cfg.ssl_ca_cert = str(self.ca_file)  # the server's self-signed cert: TLS stays verified
        return cfg

    def api_client(self) -> ApiClient:
        """A new client for this server; the caller closes it."""
        return ApiClient(self.configuration())

    # --- lifecycle --------------------------------------------------------------------------

    def start(self, timeout: float = 60.0) -> None:
        self._prepare()
        try:
            self._spawn("etcd", self._etcd_args())
            self._wait("etcd", self._etcd_healthy, timeout)
            self._spawn("apiserver", self._apiserver_args())
            self._wait("apiserver", self.ready, timeout)
        except BaseException:
            self.stop()
            raise
        self._write_kubeconfig()

    def start_controller_manager(self) -> None:
        args = [
            str(self.bin_dir / "kube-controller-manager"),
            f"--kubeconfig={self.kubeconfig}",
            "--leader-elect=false",
            f"--controllers={KCM_CONTROLLERS}",
            "--bind-address=127.0.0.1",
            "--secure-port=0",
            "--port=0",
        ]
        self._spawn("controller-manager", args)

    def stop(self, grace: float | None = None) -> None:
        """Controller-manager, apiserver, then etcd; each SIGTERM, then SIGKILL past its grace
        (``STOP_GRACE``, or ``grace`` seconds for each when given)."""
        for name in sorted(self.procs, key=STOP_ORDER.index):
            self.procs.pop(name).stop(STOP_GRACE[name] if grace is None else grace)

    def running(self) -> bool:
        return bool(self.procs) and all(p.running for p in self.procs.values())

    def ready(self) -> bool:
        """GET /readyz answers 200 (TLS verified against the server's own certificate)."""
        if not self.ca_file.is_file():
            return False
        try:
            context = ssl.create_default_context(cafile=str(self.ca_file))
            request = urllib.request.Request(
                self.host + "/readyz", headers={"Authorization": f"Bearer {self.token}"}
            )
            with urllib.request.urlopen(request, context=context, timeout=2) as response:
                return bool(response.status == 200)
        except (OSError, ssl.SSLError):
            return False

    # --- internals --------------------------------------------------------------------------

    def _prepare(self) -> None:
        pki = self.work / "pki"
        (self.work / "etcd").mkdir(parents=True, exist_ok=True)
        pki.mkdir(parents=True, exist_ok=True)
        tokens = pki / "tokens.csv"
        if not tokens.is_file():
            _write_private(tokens, f"{secrets.token_hex(16)},admin,admin,system:masters\n")
        elif tokens.stat().st_mode & 0o077:  # left open by a start of an earlier version
            tokens.chmod(0o600)
        if not (pki / "sa.key").is_file():
            _make_key(pki / "sa.key")

    def _etcd_args(self) -> list[str]:
        client, peer = f"http://127.0.0.1:{self.ports.etcd}", f"http://127.0.0.1:{self.ports.peer}"
        args = [
            self.etcd_bin,
            "--name=local",
            f"--data-dir={self.work / 'etcd'}",
            "--log-level=warn",
            f"--listen-client-urls={client}",
            f"--advertise-client-urls={client}",
            f"--listen-peer-urls={peer}",
            f"--initial-advertise-peer-urls={peer}",
            f"--initial-cluster=local={peer}",
        ]
        return args if self.fsync else [*args, "--unsafe-no-fsync"]

    def _apiserver_args(self) -> list[str]:
        pki = self.work / "pki"
        disabled = (
            "ServiceAccount"
            if self.pvc_protection
            else "ServiceAccount,StorageObjectInUseProtection"
        )
        return [
            str(self.bin_dir / "kube-apiserver"),
            f"--etcd-servers=http://127.0.0.1:{self.ports.etcd}",
            "--bind-address=127.0.0.1",
            "--advertise-address=127.0.0.1",
            f"--secure-port={self.ports.api}",
            f"--cert-dir={pki}",
            f"--token-auth-file={pki / 'tokens.csv'}",
            f"--authorization-mode={self.authorization}",
            "--service-account-issuer=https://kubernetes.default.svc",
            f"--service-account-key-file={pki / 'sa.key'}",
            f"--service-account-signing-key-file={pki / 'sa.key'}",
            "--service-cluster-ip-range=10.0.0.0/24",
            f"--disable-admission-plugins={disabled}",
            "--endpoint-reconciler-type=none",
            "--enable-priority-and-fairness=false",
            "--watch-cache=false",
            "--runtime-config=" + ",".join(
                f"{group}=false" if "/" in group else f"{group}/v1beta1=false"
                for group in UNSERVED_BETAS),
        ]

    def _spawn(self, name: str, args: list[str]) -> None:
        env = {**os.environ, "GOMAXPROCS": "1"}
        if name == "apiserver":
            env["GOGC"] = APISERVER_GOGC
        child = Child(name, args, record(self.work, name), marker=str(self.work),
                      death_signal=DEATH_SIGNAL[name], output=self.work / f"{name}.log", env=env)
        try:
            self.procs[name] = child.start()
        except OSError as exc:
            raise ControlPlaneError(f"cannot start {name}: {exc}") from exc

    def _wait(self, name: str, check: Callable[[], bool], timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while not check():
            if not self.procs[name].running or time.monotonic() > deadline:
                tail = _tail(self.work / f"{name}.log")
                raise ControlPlaneError(f"{name} did not become ready; last log lines:\n{tail}")
            time.sleep(0.1)

    def _etcd_healthy(self) -> bool:
        url = f"http://127.0.0.1:{self.ports.etcd}/health"
        try:
            with urllib.request.urlopen(url, timeout=1) as response:
                return bool(response.status == 200)
        except OSError:
            return False

    def _write_kubeconfig(self) -> None:
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": "local",
                    "cluster": {"server": self.host, "certificate-authority": str(self.ca_file)},
                }
            ],
            "users": [{"name": "admin", "user": {"token": self.token}}],
            "contexts": [{"name": "local", "context": {"cluster": "local", "user": "admin"}}],
            "current-context": "local",
        }
        self.kubeconfig.write_text(json.dumps(config, indent=2) + "\n")  # JSON is valid YAML
        self.kubeconfig.chmod(0o600)


def _tail(path: Path, lines: int = 15) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def record(work: Path, name: str) -> Path:
    """Where the child ``name`` of the control plane in ``work`` is recorded."""
    return work / f"{name}.child.json"


def stop_stale(work: Path) -> None:
    """End the processes a dead earlier owner left behind for ``work``, in stop order; a
    process is only touched if its start time and command line still match its record."""
    for name in STOP_ORDER:
        stop_stale_child(record(work, name), STOP_GRACE[name])

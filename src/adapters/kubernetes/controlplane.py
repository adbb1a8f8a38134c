"""Run etcd + kube-apiserver (+ kube-controller-manager) as child processes on 127.0.0.1.

The building block of the local development control plane and of the test fixtures: one work
directory holds the data, PKI, logs, pid file and a kubeconfig with a verified CA and a bearer
token. By default the server authorizes everything (``authorization="RBAC"`` enforces Roles):
it must only ever listen on loopback.
"""

from __future__ import annotations

import contextlib
import ctypes
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
from typing import IO

from kubernetes.client import ApiClient, Configuration

log = logging.getLogger(__name__)
KCM_CONTROLLERS = "garbagecollector,namespace,pvc-protection"
PR_SET_PDEATHSIG = 1


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
        die_with_parent: bool = False,
        authorization: str = "AlwaysAllow",
    ) -> None:
        self.bin_dir = bin_dir
        # "RBAC" makes the server enforce Roles (the admin token stays in system:masters)
        self.authorization = authorization
        # children get SIGTERM when the starting thread dies, even by SIGKILL (tests: call start()
        # from the main thread); otherwise they outlive a crash and ``stop_stale`` ends them
        self.die_with_parent = die_with_parent
        self.work = work.resolve()
        self.ports = ports
        self.fsync = fsync
        self.etcd_bin = etcd
        # pvc-in-use protection only makes sense when a controller removes the finalizer
        self.pvc_protection = controller_manager
        self.procs: dict[str, subprocess.Popen[bytes]] = {}

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

    def stop(self, grace: float = 10.0) -> None:
        for name in reversed(list(self.procs)):
            proc = self.procs.pop(name)
            if proc.poll() is None:
                proc.terminate()
            try:
                proc.wait(grace)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        with contextlib.suppress(FileNotFoundError):
            (self.work / "pids.json").unlink()

    def running(self) -> bool:
        return bool(self.procs) and all(p.poll() is None for p in self.procs.values())

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
            tokens.write_text(f"{secrets.token_hex(16)},admin,admin,system:masters\n")
            tokens.chmod(0o600)
        if not (pki / "sa.key").is_file():
            subprocess.run(
                ["openssl", "genrsa", "-out", str(pki / "sa.key"), "2048"],
                check=True,
                capture_output=True,
            )

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
        ]

    def _spawn(self, name: str, args: list[str]) -> None:
        log_file: IO[bytes]
        with open(self.work / f"{name}.log", "ab") as log_file:
            try:
                self.procs[name] = subprocess.Popen(
                    args,
                    stdin=subprocess.DEVNULL,
                    stdout=log_file,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,  # a terminal's Ctrl-C reaches us, and we stop them
                    preexec_fn=_die_with_parent if self.die_with_parent else None,
                )
            except OSError as exc:
                raise ControlPlaneError(f"cannot start {name}: {exc}") from exc
        pids = {n: p.pid for n, p in self.procs.items()}
        (self.work / "pids.json").write_text(json.dumps(pids))

    def _wait(self, name: str, check: Callable[[], bool], timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while not check():
            proc = self.procs[name]
            if proc.poll() is not None or time.monotonic() > deadline:
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


def _die_with_parent() -> None:
    """In the child before exec: ask Linux for SIGTERM when the parent thread exits."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def _tail(path: Path, lines: int = 15) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def stop_stale(work: Path, grace: float = 10.0) -> None:
    """End processes a crashed earlier run left behind for ``work`` (per its pids.json), but only
    those whose command line still names ``work``: a recycled pid is never touched."""
    pids_file = work / "pids.json"
    try:
        pids: dict[str, int] = json.loads(pids_file.read_text())
    except (OSError, ValueError):
        return
    stale = [pid for pid in reversed(list(pids.values())) if _names(pid, work)]
    for pid in stale:
        log.info("stopping stale control-plane process %s", pid)
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
        _await_exit(pid, grace)
    pids_file.unlink(missing_ok=True)


def _names(pid: int, work: Path) -> bool:
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return False
    return str(work.resolve()) in cmdline


def _await_exit(pid: int, grace: float) -> None:
    deadline = time.monotonic() + grace
    while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    if Path(f"/proc/{pid}").exists():
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)

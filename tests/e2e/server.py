"""Run ``context-service serve`` (or ``worker NAME``) as a real process, the way a user does:
start it, drive it over HTTP, signal it, wait for it, and list what still runs for its data
directory.

``ServerProcess(data_dir).start()`` waits for ``/healthz``; ``ServerProcess(data_dir,
command=("worker", "relay")).start()`` waits for the worker's "worker active" log line.
``signal_and_wait(SIGTERM)`` returns the exit code and how long the process took to end;
``data_dir_processes(data_dir)`` names every process whose command line mentions the data
directory (embedded PostgreSQL, nats-server, etcd, kube-apiserver, ...), so a test can assert
that nothing outlived the service.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import psutil

from context_service.adapters.postgres import embedded


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def still_free(port: int) -> bool:
    """Whether a server could listen on ``port`` now (as uvicorn and NATS bind: reusing an
    address in TIME_WAIT)."""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def data_dir_processes(data_dir: Path) -> list[psutil.Process]:
    """Processes (other than this one) whose command line names ``data_dir``."""
    marker = str(data_dir.resolve()) + os.sep  # children name a directory inside it
    found = []
    for proc in psutil.process_iter(["pid", "cmdline", "status"]):
        if proc.pid == os.getpid() or proc.info["status"] == psutil.STATUS_ZOMBIE:
            continue
        if marker in " ".join(proc.info["cmdline"] or ()):
            found.append(proc)
    return found


def await_no_processes(data_dir: Path, timeout: float = 10.0) -> list[str]:
    """Wait until nothing runs for ``data_dir``; return what still does after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        left = data_dir_processes(data_dir)
        if not left or time.monotonic() > deadline:
            return [" ".join(p.info["cmdline"] or ())[:160] for p in left]
        time.sleep(0.1)


class ServerProcess:
    def __init__(self, data_dir: Path, env: dict[str, str] | None = None,
                 command: tuple[str, ...] = ("serve",), log_name: str = "serve.log",
                 executable: tuple[str, ...] = (sys.executable, "-m", "context_service.cli"),
                 cwd: Path | None = None) -> None:
        self.data_dir = data_dir
        self.port = free_port()
        self.command = command
        self.log_path = data_dir / log_name
        self.executable = executable
        self.cwd = cwd
        self.env = {**os.environ, "CS_DATA_DIR": str(data_dir),
                    "CS_LISTEN_ADDR": f"127.0.0.1:{self.port}", "CS_SANDBOX_IMAGE": "busybox:1.36",
                    "CS_KUBE": "off", "CS_WORKERS": "projections", "CS_LOG_FORMAT": "json",
                    "CS_NATS_LISTEN": f"127.0.0.1:{free_port()}", **(env or {})}
        self.env.pop("CS_DATABASE_URL", None)
        self.proc: subprocess.Popen[bytes] | None = None
        self._offset = 0
        self.url = f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 60) -> None:
        """Start the process; return once it serves (``serve``) or is active (``worker``). A
        process that could not listen because a test beside this one took its port between
        the choice and the bind starts again on another port."""
        for attempt in range(3):
            self.launch()
            # one client for every probe: a client made per probe loads the CA certificates
            # each time, about 40 ms of CPU every 50 ms while the service starts (measured)
            with httpx.Client(timeout=1) as probe:
                try:
                    self.wait_until(lambda: self._ready(probe), timeout, "did not become ready")
                    return
                except RuntimeError:
                    assert self.proc is not None
                    taken = self.proc.poll() is not None and self.logged("address already in use")
                    if attempt == 2 or not taken:
                        raise
            self.port = free_port()
            self.url = f"http://127.0.0.1:{self.port}"
            self.env["CS_LISTEN_ADDR"] = f"127.0.0.1:{self.port}"

    def launch(self) -> None:
        """Start the process without waiting for anything. A restart listens where the last
        start did, unless another process (a test beside this one, a child of it) took the
        port meanwhile: then on a new one."""
        if not still_free(self.port):
            self.port = free_port()
            self.url = f"http://127.0.0.1:{self.port}"
            self.env["CS_LISTEN_ADDR"] = f"127.0.0.1:{self.port}"
        host, _, nats = self.env.get("CS_NATS_LISTEN", "").rpartition(":")
        if host == "127.0.0.1" and nats.isdigit() and not still_free(int(nats)):
            self.env["CS_NATS_LISTEN"] = f"127.0.0.1:{free_port()}"
        self._offset = self.log_path.stat().st_size if self.log_path.exists() else 0
        log = open(self.log_path, "ab")  # noqa: SIM115 - closed by the process end
        self.proc = subprocess.Popen([*self.executable, *self.command], env=self.env,
                                     stdout=log, stderr=subprocess.STDOUT, cwd=self.cwd)
        log.close()

    def wait_until(self, check: Callable[[], bool], timeout: float = 30,
                   what: str = "timed out") -> None:
        """Poll ``check`` while the process runs; fail with its log if it ends or times out."""
        assert self.proc is not None
        deadline = time.monotonic() + timeout
        while not check():
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.command[0]} exited: {self.log_text()[-3000:]}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"{self.command[0]} {what}: {self.log_text()[-3000:]}")
            time.sleep(0.05)

    def logged(self, text: str) -> bool:
        """``text`` appears in what this run of the process wrote."""
        with self.log_path.open("rb") as log:
            log.seek(self._offset)
            return text.encode() in log.read()

    def _ready(self, probe: httpx.Client) -> bool:
        if self.command[0] == "worker":
            return self.logged('"worker active"')
        try:
            return probe.get(self.url + "/healthz").status_code == 200
        except httpx.HTTPError:
            return False

    def client(self) -> httpx.Client:
        return httpx.Client(base_url=self.url, timeout=30)

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def log_records(self) -> list[dict[str, Any]]:
        """The JSON log lines written so far (other output skipped)."""
        records = []
        for line in self.log_text().splitlines():
            if line.startswith("{"):
                try:
                    records.append(json.loads(line))
                except ValueError:
                    continue
        return records

    def signal_and_wait(self, sig: int = signal.SIGTERM, timeout: float = 60) -> tuple[int, float]:
        """Send ``sig`` and wait for the process to end: (exit code, seconds it took)."""
        assert self.proc is not None
        started = time.monotonic()
        self.proc.send_signal(sig)
        code = self.proc.wait(timeout)
        return code, time.monotonic() - started

    def stop(self, sig: int = signal.SIGINT) -> int:
        assert self.proc is not None
        self.proc.send_signal(sig)
        try:
            return self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait(10)

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.kill()
        self.proc.wait(10)

    def cleanup(self) -> None:
        """Kill the process if it still runs, then anything left for its data directory."""
        if self.proc is not None and self.proc.poll() is None:
            self.kill()
        embedded.stop(self.data_dir)
        for proc in data_dir_processes(self.data_dir):
            with contextlib.suppress(psutil.Error):
                proc.kill()


def context(name: str) -> dict[str, Any]:
    return {"name": name, "namespace": "e2e", "type": "memory",
            "storage": {"backend": "pvc", "size": "1Gi", "accessMode": "ReadWriteOnce"}}

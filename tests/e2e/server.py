"""Run ``context-service serve`` as a real process, the way a user does."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

from context_service.adapters.postgres import embedded


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class ServerProcess:
    def __init__(self, data_dir: Path, env: dict[str, str] | None = None) -> None:
        self.data_dir = data_dir
        self.port = free_port()
        self.env = {**os.environ, "CS_DATA_DIR": str(data_dir),
                    "CS_LISTEN_ADDR": f"127.0.0.1:{self.port}", "CS_SANDBOX_IMAGE": "busybox:1.36",
                    "CS_KUBE": "off", "CS_WORKERS": "projections", "CS_LOG_FORMAT": "json",
                    **(env or {})}
        self.env.pop("CS_DATABASE_URL", None)
        self.proc: subprocess.Popen[bytes] | None = None
        self.url = f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 60) -> None:
        log = open(self.data_dir / "serve.log", "ab")  # noqa: SIM115 - closed by the process end
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "context_service.cli", "serve"], env=self.env, stdout=log,
            stderr=subprocess.STDOUT)
        log.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"serve exited: {(self.data_dir / 'serve.log').read_text()}")
            try:
                if httpx.get(self.url + "/healthz", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                time.sleep(0.1)
        raise RuntimeError("serve did not become healthy")

    def client(self) -> httpx.Client:
        return httpx.Client(base_url=self.url, timeout=30)

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
        if self.proc is not None and self.proc.poll() is None:
            self.kill()
        embedded.stop(self.data_dir)


def context(name: str) -> dict[str, Any]:
    return {"name": name, "namespace": "e2e", "type": "memory",
            "storage": {"backend": "pvc", "size": "1Gi", "accessMode": "ReadWriteOnce"}}

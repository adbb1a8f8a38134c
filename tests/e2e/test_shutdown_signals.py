"""No stop signal is lost: a SIGTERM at any moment of ``serve``'s life (start-up while the
embedding model loads, just before serving, the first index publication as the feature child
starts, packs in flight) ends in the same clean, complete shutdown: the ``shutdown requested``
line, ``shutdown complete``, exit code 0, and no process of the service left running, the
feature child and multiprocessing's resource tracker included.

Each moment starts its own ``serve`` over a fresh database of the suite's shared PostgreSQL, so
a start costs only the migration check and the model."""

from __future__ import annotations

import contextlib
import hashlib
import signal
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import psutil
import pytest

from tests.e2e.server import ServerProcess, await_no_processes

pytestmark = [pytest.mark.e2e, pytest.mark.postgres, pytest.mark.slow]
ADMIN = {"X-Context-Subject": "service:context-service-admin"}
ALICE = {"X-Context-Subject": "user:alice"}
WS = "acme"


def _maps(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return ""


def _children(server: ServerProcess) -> list[str]:
    assert server.proc is not None
    with contextlib.suppress(psutil.Error):
        return [" ".join(p.cmdline()) for p in psutil.Process(server.proc.pid).children()]
    return []


def _left_behind(data_dir: Path) -> list[str]:
    """Processes whose environment names this data directory: every descendant of the
    service (the feature child and the resource tracker name no directory on their command
    line, but inherit ``CS_DATA_DIR``)."""
    found = []
    for proc in psutil.process_iter(["pid", "cmdline"]):
        with contextlib.suppress(psutil.Error):
            if proc.environ().get("CS_DATA_DIR") == str(data_dir) and proc.is_running() \
                    and proc.status() != psutil.STATUS_ZOMBIE:
                found.append(" ".join(proc.info["cmdline"] or ())[:160])
    return found


def _until(server: ServerProcess, check: Callable[[], bool], what: str) -> None:
    server.wait_until(check, 90, f"never reached: {what}")


class Moment:
    """Starts ``serve`` and returns once at the moment to signal."""

    def __init__(self, name: str, started: bool, wait: Callable[[ServerProcess, Api], None]):
        self.name, self.started, self.wait = name, started, wait

    def __repr__(self) -> str:
        return self.name


class Api:
    """The routes a moment drives: a workspace, a published index, packs."""

    def __init__(self, server: ServerProcess, tag: str) -> None:
        self.http = httpx.Client(base_url=server.url, timeout=60)
        self.tag = tag
        self.token = ""
        self.packs: list[threading.Thread] = []
        self.statuses: list[int] = []

    def ok(self, method: str, path: str, body: Any, headers: dict[str, str], status: int) -> Any:
        response = self.http.request(method, path, json=body, headers=headers)
        assert response.status_code == status, response.text
        return response

    def seed(self) -> None:
        self.ok("PUT", f"/v1/namespaces/{WS}/members",
                {"subject": {"kind": "user", "name": "alice"}, "role": "owner"}, ADMIN, 200)
        self.ok("POST", "/v1/contexts", {
            "name": "facts", "namespace": WS, "type": "knowledge",
            "storage": {"backend": "pvc", "size": "1Gi", "accessMode": "ReadWriteMany"}},
            ALICE, 201)

    def publish(self) -> None:
        """A new revision with texts no process has seen: the feature child starts for it."""
        revision = hashlib.sha256(self.tag.encode()).hexdigest()
        base = f"/v1/namespaces/{WS}/contexts/facts"
        self.ok("POST", f"{base}/revisions", {"id": revision, "createdAt": "2026-05-01T10:00:00Z",
                                              "operation": "sync"}, ALICE, 201)
        records = [{"id": f"r{i}", "context": "facts", "type": "knowledge", "revision": revision,
                    "text": f"{self.tag}: Acme appointed CFO number {i} in the plan of {i} July.",
                    "source": {"context": "", "type": "", "revision": ""}} for i in range(24)]
        self.ok("PUT", f"{base}/query-index", {"revision": revision, "records": records},
                ALICE, 204)

    def credential(self) -> None:
        self.token = self.ok("POST", f"/api/w/{WS}/agent-credentials", {
            "name": "agent", "scopes": ["context:read"], "expiresInDays": 30},
            ALICE, 201).json()["token"]

    def pack_in_background(self) -> None:
        def run() -> None:
            with contextlib.suppress(httpx.HTTPError):  # the listener closed: never answered
                self.statuses.append(self.http.post(
                    "/api/agent/v1/context-packs",
                    headers={"Authorization": f"Bearer {self.token}"},
                    json={"task": "Who is the CFO?", "budget": {"maxTokens": 2000}}).status_code)

        thread = threading.Thread(target=run)
        thread.start()
        self.packs.append(thread)

    def close(self) -> None:
        for thread in self.packs:
            thread.join(60)
        self.http.close()


def _model_loading(server: ServerProcess, api: Api) -> None:
    assert server.proc is not None
    pid = server.proc.pid
    _until(server, lambda: "tokenizers" in _maps(pid), "the model's tokenizer loaded")


def _after_model(server: ServerProcess, api: Api) -> None:
    _model_loading(server, api)
    time.sleep(0.5)


def _about_to_serve(server: ServerProcess, api: Api) -> None:
    _until(server, lambda: server.logged('"context service listening"'), "listening")


def _index_published(server: ServerProcess, api: Api) -> None:
    api.seed()
    api.publish()


def _child_starting(name: str, after: float = 0.0) -> Callable[[ServerProcess, Api], None]:
    def wait(server: ServerProcess, api: Api) -> None:
        api.seed()
        api.publish()
        _until(server, lambda: any(name in c for c in _children(server)), name)
        time.sleep(after)

    return wait


def _packing(concurrent: int, after: float) -> Callable[[ServerProcess, Api], None]:
    def wait(server: ServerProcess, api: Api) -> None:
        api.seed()
        api.publish()
        api.credential()
        for _ in range(concurrent):
            api.pack_in_background()
        time.sleep(after)

    return wait


MOMENTS = [
    Moment("model loading", False, _model_loading),
    Moment("model loaded", False, _after_model),
    Moment("about to serve", False, _about_to_serve),
    Moment("index published", True, _index_published),
    Moment("resource tracker starting", True, _child_starting("resource_tracker")),
    Moment("feature child starting", True, _child_starting("spawn_main")),
    Moment("feature child loading", True, _child_starting("spawn_main", after=0.3)),
    Moment("feature child computing", True, _child_starting("spawn_main", after=1.5)),
    Moment("one pack in flight", True, _packing(1, after=0.05)),
    Moment("packs in flight", True, _packing(4, after=0.3)),
]


@pytest.fixture
def server(data_dir: Path, database_url: str) -> Iterator[ServerProcess]:
    proc = ServerProcess(data_dir, env={"CS_WORKERS": "projections,query-index",
                                        "CS_AGENT_RATE_PER_SECOND": "0"})
    proc.env["CS_DATABASE_URL"] = database_url  # the suite's server: each start is cheap
    yield proc
    proc.cleanup()
    for left in psutil.process_iter():
        with contextlib.suppress(psutil.Error):
            if left.environ().get("CS_DATA_DIR") == str(data_dir):
                left.kill()


@pytest.mark.parametrize("moment", MOMENTS, ids=repr)
def test_sigterm_at_any_moment_shuts_down_cleanly(
        moment: Moment, server: ServerProcess, data_dir: Path) -> None:
    if moment.started:
        server.start(timeout=120)
    else:
        server.launch()
    api = Api(server, moment.name)
    try:
        moment.wait(server, api)
        code, _ = server.signal_and_wait(signal.SIGTERM, timeout=60)
    finally:
        api.close()

    log = server.log_text()[-3000:]
    assert code == 0, log
    records = server.log_records()
    requested = [r for r in records if r.get("message") == "shutdown requested"]
    assert [r["signal"] for r in requested] == ["SIGTERM"], log
    assert any(r.get("message") == "shutdown complete" for r in records), log
    assert set(api.statuses) <= {200, 503}, api.statuses  # a pack is answered or drained
    assert await_no_processes(data_dir, timeout=5) == []
    deadline = time.monotonic() + 10
    while (left := _left_behind(data_dir)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert left == []

"""``contextctl`` against a real ``context-service serve`` process over a database of its own on
the suite's PostgreSQL: one service for the package's modules (the Kubernetes ones start their
own), and ``cli`` running the client in this process (its real HTTP client, its real exit
codes)."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from psycopg.conninfo import make_conninfo

from context_service.adapters.kubernetes.client import close
from context_service.adapters.kubernetes.cluster import KubernetesCluster
from context_service.adapters.kubernetes.rest import Rest
from context_service.contextctl.main import main
from context_service.devcluster.controlplane import ControlPlane
from tests.e2e.server import ServerProcess
from tests.support.kube import running_apiserver
from tests.support.services import Databases


@dataclass(frozen=True)
class Outcome:
    code: int
    out: str
    err: str


Cli = Callable[..., Outcome]


@contextlib.contextmanager
def scratch_dir() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="cs-ctl-"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@contextlib.contextmanager
def fresh_database(admin_url: str, template: str, databases: Databases) -> Iterator[str]:
    """A fresh migrated database on the suite's PostgreSQL: none of these tests is about the
    embedded server, whose initdb and start would cost each service seconds."""
    name = databases.clone(template)
    try:
        yield make_conninfo(admin_url, dbname=name)
    finally:
        databases.drop(name)


@pytest.fixture(scope="module")
def module_dir() -> Iterator[Path]:
    with scratch_dir() as path:
        yield path


@pytest.fixture(scope="module")
def module_database_url(pg_admin_url: str, pg_template: str,
                        test_databases: Databases) -> Iterator[str]:
    """A database for a module's own service (the Kubernetes modules')."""
    with fresh_database(pg_admin_url, pg_template, test_databases) as url:
        yield url


def served(data_dir: Path, database_url: str, env: dict[str, str]) -> ServerProcess:
    """A started ``serve`` process over ``database_url``."""
    proc = ServerProcess(data_dir, env=env)
    proc.env["CS_DATABASE_URL"] = database_url
    proc.start()
    return proc


@pytest.fixture(scope="package")
def service(pg_admin_url: str, pg_template: str,
            test_databases: Databases) -> Iterator[ServerProcess]:
    """A service without Kubernetes (contexts, access, revisions, index, query, history, the
    agent API), one for the modules of this package that run in a row: each module works in
    namespaces and workspaces of its own, so none sees another's data. A module with other
    needs defines a ``service`` of its own."""
    with scratch_dir() as data_dir, fresh_database(pg_admin_url, pg_template,
                                                   test_databases) as url:
        proc = served(data_dir, url, {"CS_WORKERS": "projections,query-index"})
        yield proc
        proc.cleanup()


def make_cli(url: str, monkeypatch: pytest.MonkeyPatch,
             capsys: pytest.CaptureFixture[str]) -> Cli:
    def run(*args: str, subject: str | None = "user:alice", **env: str) -> Outcome:
        with monkeypatch.context() as patch:
            for name in ("CS_TOKEN", "CS_SUBJECT", "CS_NAMESPACE", "CS_STORAGE_CLASS",
                         "CS_AGENT_TOKEN"):
                patch.delenv(name, raising=False)
            patch.setenv("CS_URL", url)
            if subject is not None:
                patch.setenv("CS_SUBJECT", subject)
            for name, value in env.items():
                patch.setenv(name, value)
            capsys.readouterr()
            code = main(list(args))
            captured = capsys.readouterr()
        return Outcome(code, captured.out, captured.err)

    return run


@pytest.fixture
def cli(service: ServerProcess, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> Cli:
    return make_cli(service.url, monkeypatch, capsys)


@pytest.fixture(scope="package")
def plane(kube_bin_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    """This package's own kube-apiserver: ``serve`` adopts labelled objects of the whole cluster
    at start, and the session server holds every other test's leftovers."""
    with running_apiserver(kube_bin_dir, tmp_path_factory.mktemp("kube-ctl")) as started:
        yield started


@pytest.fixture(scope="package")
def kube(plane: ControlPlane) -> Iterator[KubernetesCluster]:
    api = plane.api_client()
    yield KubernetesCluster(Rest(api))
    close(api)


def kube_service(data_dir: Path, database_url: str, plane: ControlPlane,
                 kube: KubernetesCluster, namespace: str) -> ServerProcess:
    """A started service reconciling ``namespace`` of ``plane`` (pools live there too)."""
    kube.ensure_namespace(namespace)
    return served(data_dir, database_url, {
        "CS_KUBE": "kubeconfig", "KUBECONFIG": str(plane.kubeconfig), "CS_NAMESPACE": namespace,
        "CS_WORKERS": "projections,reconciler,snapshots"})


def complete_words(url: str, words: str, monkeypatch: pytest.MonkeyPatch,
                   capsys: pytest.CaptureFixture[str]) -> list[str]:
    """What the bash completion function receives for the command line ``words``."""
    with monkeypatch.context() as patch:
        patch.setenv("CS_URL", url)
        patch.setenv("CS_SUBJECT", "user:alice")
        patch.setenv("_CONTEXTCTL_COMPLETE", "bash_complete")
        patch.setenv("COMP_WORDS", words)
        patch.setenv("COMP_CWORD", str(len(words.split(" ")) - 1))
        capsys.readouterr()
        with pytest.raises(SystemExit):
            main([])
        return [line.split(",", 1)[1] for line in capsys.readouterr().out.splitlines() if line]


@pytest.fixture
def silent_service() -> Iterator[tuple[str, list[socket.socket]]]:
    """An address that accepts connections and never answers; the connections it accepted."""
    server = socket.create_server(("127.0.0.1", 0))
    accepted: list[socket.socket] = []
    server.settimeout(0.2)
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                accepted.append(server.accept()[0])
            except TimeoutError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.getsockname()[1]}", accepted
    finally:
        stop.set()
        thread.join(5)
        for connection in accepted:
            connection.close()
        server.close()


# ``contextctl mcp`` as an agent's host launches it
MCP_COMMAND = (sys.executable, "-m", "context_service.contextctl", "mcp")


def bridge_environment(url: str, token: str) -> dict[str, str]:
    """The environment ``contextctl mcp`` is launched with: this one's without its ``CS_``
    settings, the service at ``url`` and the agent's ``token``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CS_")}
    env.update(CS_URL=url, CS_AGENT_TOKEN=token)
    return env

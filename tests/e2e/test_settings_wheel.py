"""The settings pages' templates and assets ship in the built wheel, and the installed package
finds them (Jinja2's package loader and the static directory), as a user's install does."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SETTINGS = ROOT / "src" / "http" / "settings"

pytestmark = pytest.mark.slow

CHECK = """
import sys
from context_service.http.settings import pages
assert sys.modules["context_service"].__file__.startswith(sys.argv[1]), "not the wheel's"
env = pages.template_config().engine_instance.engine
html = env.get_template("agent_access.html").render(
    title="t", script="agent-access", workspace="acme", csrf_token="x", dev_subject=False,
    nav="agent-access")
assert 'src="/settings/static/js/agent-access.js"' in html
print(sorted(p.name for p in pages.STATIC_DIR.rglob("*") if p.is_file()))
"""


def test_the_wheel_carries_the_pages(tmp_path: Path, project_wheel: Path) -> None:
    wheel = project_wheel  # the session's build (tests/e2e/wheel.py), shared with test_wheel.py
    names = set(zipfile.ZipFile(wheel).namelist())
    assets = [p.relative_to(ROOT / "src").as_posix() for p in SETTINGS.rglob("*")
              if p.is_file() and p.parent.name != "__pycache__" and p.suffix != ".py"]
    assert len(assets) >= 10
    missing = [a for a in assets if f"context_service/{a}" not in names]
    assert missing == []

    installed = tmp_path / "installed"
    zipfile.ZipFile(wheel).extractall(installed)
    ran = subprocess.run([sys.executable, "-c", CHECK, str(installed)], capture_output=True,
                         text=True, timeout=60, cwd=tmp_path,
                         env={"PYTHONPATH": str(installed), "PATH": "/usr/bin:/bin"})
    assert ran.returncode == 0, ran.stderr
    assert "'settings.css'" in ran.stdout and "'agent-access.js'" in ran.stdout

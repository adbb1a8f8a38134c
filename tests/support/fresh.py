"""Code run in a fresh interpreter: what a module imports can only be seen in a process that has
imported nothing yet (the test process holds most of the dependencies already)."""

from __future__ import annotations

import ast
import subprocess
import sys
from typing import NamedTuple


class Probe(NamedTuple):
    printed: list[str]  # what the code itself printed, by line
    result: str  # ``repr`` of its ``result``
    imported: list[str]  # the modules of the packages asked about that it imported


def loaded_packages(code: str, packages: tuple[str, ...]) -> Probe:
    """Run ``code`` (Python statements; the name ``result`` may hold a value to report) in a
    fresh interpreter, and see which modules of ``packages`` it imported."""
    probe = (f"import sys\nresult = None\n{code}\n"
             f"print(repr(result))\n"
             f"print(sorted(m for m in sys.modules if m.split('.')[0] in {packages!r}))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=120, check=True)
    *printed, result, imported = done.stdout.splitlines()
    return Probe(printed, result, ast.literal_eval(imported))

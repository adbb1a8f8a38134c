"""Golden transcripts: run commands in order, write what a terminal would show (``$`` command,
standard output, ``!`` standard error lines, ``[exit N]``), normalised, and compare with
``golden/<name>.txt``. ``CONTEXTCTL_GOLDEN_UPDATE=1`` rewrites the files instead."""

from __future__ import annotations

import os
import shlex
from collections.abc import Sequence
from pathlib import Path

from tests.contextctl.conftest import Cli
from tests.contextctl.normalise import normalise

GOLDEN = Path(__file__).parent / "golden"


def transcript(cli: Cli, commands: Sequence[Sequence[str]], **env: str) -> str:
    """``env`` is set for every command (and not written: a token differs at each run)."""
    parts = []
    for args in commands:
        outcome = cli(*args, **env)
        parts.append("$ contextctl " + shlex.join(args) + "\n")
        parts.append(outcome.out)
        parts.extend(f"! {line}\n" for line in outcome.err.splitlines())
        if outcome.code:
            parts.append(f"[exit {outcome.code}]\n")
    return normalise("".join(parts), columns=False)


def check(name: str, text: str) -> None:
    path = GOLDEN / f"{name}.txt"
    if os.environ.get("CONTEXTCTL_GOLDEN_UPDATE") == "1":
        path.write_text(text)
    assert text == path.read_text(), f"differs from {path}"

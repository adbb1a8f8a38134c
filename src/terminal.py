"""Whether a progress bar may be drawn on standard error: the server's commands and contextctl
draw theirs only on a terminal, so that piped or redirected output holds the result lines alone.
``FORCE_COLOR`` (set by CI services) makes ``rich`` take any file for a terminal, and a bar redrawn
ten times a second would fill a log: only ``TTY_COMPATIBLE=1`` says a file is one."""

from __future__ import annotations

import os
import sys
from typing import Any


def draws_bars(err: Any) -> bool:
    """``err``: the ``rich`` console on standard error."""
    try:
        return bool(err.is_terminal and (sys.stderr.isatty()
                                         or os.environ.get("TTY_COMPATIBLE") == "1"))
    except ValueError:  # standard error closed
        return False

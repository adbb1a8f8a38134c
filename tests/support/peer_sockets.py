"""A peer's end of a connection, as a test's stand-in service sees it."""

from __future__ import annotations

import socket
import time


def closed_by_peer(connection: socket.socket, within: float) -> bool:
    """Whether the other end closed ``connection`` (a request given up) within ``within`` s."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        connection.settimeout(0.2)
        try:
            if connection.recv(65536) == b"":
                return True
        except TimeoutError:
            continue
        except OSError:
            return True
    return False

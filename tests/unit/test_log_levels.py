"""The service's log keeps to what an operator acts on: the MCP SDK's stateless transport logs
``Terminating session: None`` at info after every POST to ``/mcp`` (one line a tool call, naming
no session), which ``logs.configure`` holds back as it does the other libraries' chatter; its
warnings still reach the log."""
from __future__ import annotations

import io
import logging
import sys
import threading
from collections.abc import Iterator

import pytest

from context_service import logs

TRANSPORT = "mcp.server.streamable_http"


@pytest.fixture
def log() -> Iterator[io.StringIO]:
    """What ``logs.configure``'s handler writes, for one test; the process's logging put back
    afterwards."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    levels = {name: logging.getLogger(name).level for name in (TRANSPORT, "context_service")}
    hooks = sys.excepthook, threading.excepthook
    logs.configure("text", env={})
    written = io.StringIO()
    handler = root.handlers[0]
    assert isinstance(handler, logging.StreamHandler)
    handler.setStream(written)
    try:
        yield written
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)
        for name, old in levels.items():
            logging.getLogger(name).setLevel(old)
        sys.excepthook, threading.excepthook = hooks


def test_the_mcp_transport_says_nothing_at_info_but_its_warnings_stay(log: io.StringIO) -> None:
    transport = logging.getLogger(TRANSPORT)
    transport.info("Terminating session: None")
    transport.warning("a warning of the transport")
    logging.getLogger("context_service").info("an info line of the service")
    lines = log.getvalue().splitlines()
    assert lines == ["warning mcp.server.streamable_http: a warning of the transport",
                     "info    context_service: an info line of the service"]

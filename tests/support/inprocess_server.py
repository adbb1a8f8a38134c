"""uvicorn serving an app on a thread of this process, for the tests of the HTTP server's own
protocol (src/http/connections.py) against real sockets."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Iterator

import uvicorn


@contextlib.contextmanager
def serving(config: uvicorn.Config) -> Iterator[tuple[uvicorn.Server, asyncio.AbstractEventLoop]]:
    """The server of ``config``, started, and its event loop; stopped when the block ends."""
    server = uvicorn.Server(config)
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_until_complete, args=(server.serve(),),
                              daemon=True)
    thread.start()
    try:
        while not server.started:
            time.sleep(0.01)
        yield server, loop
    finally:
        server.should_exit = True
        thread.join(10)
        loop.close()


def all_closed(server: uvicorn.Server, give_up: float) -> bool:
    """Wait until the server holds no connection (or ``give_up`` seconds passed)."""
    deadline = time.monotonic() + give_up
    while server.server_state.connections and time.monotonic() < deadline:
        time.sleep(0.05)
    return not server.server_state.connections

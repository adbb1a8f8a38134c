"""SIGTERM and SIGINT for a process's whole life: one handler, installed before anything else
starts and never replaced, that records a request before anything can fail, then hands it to
whatever runs at that moment: start-up is interrupted, the HTTP server drains, the shutdown
sequence notes it and goes on. A request is also read at each step of start-up, so one that a
library swallowed is still obeyed."""

from __future__ import annotations

import contextlib
import logging
import signal
import time
from collections.abc import Callable, Iterator
from types import FrameType

log = logging.getLogger("context_service")
SIGNALS = (signal.SIGINT, signal.SIGTERM)


class ShutdownRequested(BaseException):
    """A stop signal arrived during start-up: unwind to the shutdown sequence."""


class StopSignals:
    """The stop signals of this process; ``install`` once, from the main thread, first."""

    def __init__(self) -> None:
        self.signal: str | None = None  # the first stop signal, once one arrived
        self.at: float | None = None  # when (time.monotonic)
        self._target: Callable[[int], None] | None = None
        self._interrupted = False
        self._stopping = False

    @property
    def requested(self) -> bool:
        return self.signal is not None

    def install(self) -> None:
        for sig in SIGNALS:
            signal.signal(sig, self._handle)
        # a process inherits the signals its parent's thread blocked: make sure they reach us
        signal.pthread_sigmask(signal.SIG_UNBLOCK, SIGNALS)

    def check(self) -> None:
        """Between start-up steps: raise ``ShutdownRequested`` if a stop signal arrived (its
        interruption may have been caught by a step that catches everything)."""
        if self.requested and not self._stopping:
            raise ShutdownRequested

    @contextlib.contextmanager
    def delivering_to(self, target: Callable[[int], None]) -> Iterator[None]:
        """Inside: a stop signal calls ``target`` (which must only set flags) instead of
        interrupting; one that arrived before is delivered at once."""
        self._target = target
        try:
            if self.signal is not None:
                target(signal.Signals[self.signal])
            yield
        finally:
            self._target = None

    def wait(self) -> None:
        """Block until a stop signal arrives (a process whose work runs in other threads)."""
        with self.delivering_to(lambda sig: None):
            while not self.requested:
                time.sleep(0.2)  # a signal ends the sleep early; the loop bounds the rest

    @contextlib.contextmanager
    def stopping(self) -> Iterator[None]:
        """The shutdown sequence: a signal during it is noted, not obeyed (an interrupted
        shutdown is what leaves children behind, and every step of it is bounded)."""
        self._stopping = True
        started = self.at if self.at is not None else time.monotonic()
        try:
            yield
        finally:
            log.info("shutdown complete", extra={  # since the signal, when there was one
                "seconds": round(time.monotonic() - started, 3)})

    def _handle(self, sig: int, frame: FrameType | None) -> None:
        name = signal.Signals(sig).name
        first = self.signal is None
        if first:  # recorded before anything else, so nothing below can lose it
            self.signal, self.at = name, time.monotonic()
        target = None if self._stopping else self._target
        if target is not None:
            target(sig)
        if first:
            _log(logging.INFO, "shutdown requested", name)
        elif self._stopping:
            _log(logging.WARNING, "shutdown in progress; signal ignored", name)
        else:  # during the drain, a second SIGINT ends it at once (the server's rule)
            _log(logging.INFO, "shutdown already requested", name)
        if target is None and not self._stopping and not self._interrupted:
            self._interrupted = True  # once: a second raise could cut the shutdown short
            raise ShutdownRequested


def _log(level: int, message: str, name: str) -> None:
    """A log line that cannot fail the handler (a write interrupted by the signal, say)."""
    with contextlib.suppress(Exception):
        log.log(level, message, extra={"signal": name})

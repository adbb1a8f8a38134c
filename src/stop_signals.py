"""SIGTERM and SIGINT for a process's whole life: one handler, installed before anything else
starts and never replaced, that records a request before anything can fail, then hands it to
whatever runs at that moment: start-up is interrupted, the HTTP server drains, the shutdown
sequence notes it and goes on. A request is also read at each step of start-up, so one that a
library swallowed is still obeyed.

Also the one word between the HTTP drain and the event store (neither imports the other): a
request the drain answered ``503`` and abandoned must write nothing after that answer, though its
handler thread runs on (``abandonable``, ``refuse_if_abandoned``)."""

from __future__ import annotations

import contextlib
import contextvars
import logging
import signal
import time
from collections.abc import Callable, Iterator
from types import FrameType

log = logging.getLogger("context_service")
SIGNALS = (signal.SIGINT, signal.SIGTERM)


def _never() -> bool:
    return False


# Whether the request the current work serves was abandoned by the drain; handler threads run
# with a copy of the request's context, so they see the request's own answer.
_abandoned: contextvars.ContextVar[Callable[[], bool]] = contextvars.ContextVar(
    "abandoned", default=_never)


class RequestAbandoned(Exception):
    """The request this write serves was answered ``503`` (retry against another instance) and
    abandoned by the drain: the write is refused, nothing of it is stored."""


@contextlib.contextmanager
def abandonable(abandoned: Callable[[], bool]) -> Iterator[None]:
    """Inside, and in threads started with a copy of this context: the work serves a request
    that the drain may abandon, which ``abandoned`` tells."""
    token = _abandoned.set(abandoned)
    try:
        yield
    finally:
        _abandoned.reset(token)


def abandonment() -> Callable[[], bool]:
    """Whether the request the current work serves has been abandoned (asked when it matters:
    a write waits in a queue for a while)."""
    return _abandoned.get()


def refuse_if_abandoned(abandoned: Callable[[], bool] | None = None) -> None:
    """Raise ``RequestAbandoned`` if the current work's request was abandoned."""
    if (abandoned or _abandoned.get())():
        raise RequestAbandoned("the request was abandoned at shutdown; nothing was written")


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

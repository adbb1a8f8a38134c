"""How ``contextctl mcp`` stops when its agent host stops it: the end of stdin, SIGTERM or
SIGINT (at any moment, start-up included), or stdout closed. Each ends the session the one
way the MCP SDK ends it cleanly, as at the end of its input: the calls in flight are given up
(their requests to the service closed), every line already begun on stdout is finished, and
the process exits 0, as ``context-service serve`` and its workers do after a stop signal.

The session's input needs ending from outside: stdin is read line by line in a worker thread,
a read blocked on a pipe the host keeps open cannot be cancelled, and the SDK waits for that
thread before it ends (and the interpreter before it exits). ``Stdin`` is fd 0 read so that
``end`` makes a blocked read return the end of input at once."""

from __future__ import annotations

import contextlib
import io
import os
import select
import signal
from types import FrameType

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


class Stdin(io.RawIOBase):
    """File descriptor ``fd`` as a raw stream whose reads ``end`` (from any thread, a signal
    handler included) turns into the end of input: each read waits on ``fd`` and on a pipe of
    its own that ``end`` writes to."""

    def __init__(self, fd: int) -> None:
        super().__init__()
        self.fd = fd
        self.ended = False
        self._woken, self._wake = os.pipe()
        self._poll = select.poll()
        self._poll.register(fd, select.POLLIN | select.POLLPRI)
        self._poll.register(self._woken, select.POLLIN)

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        while not self.ended:
            events = dict(self._poll.poll())
            if self._woken in events:
                break
            if self.fd in events:
                # readable, at its end, or not pollable (a terminal on macOS: POLLNVAL), where
                # the read waits as it always did
                with contextlib.suppress(BlockingIOError, InterruptedError):
                    return os.readv(self.fd, [buffer])
        return 0

    def end(self) -> None:
        """The end of input for every read, the one under way included."""
        self.ended = True
        with contextlib.suppress(OSError):  # written once is enough; a full pipe is woken
            os.write(self._wake, b"\0")

    def close(self) -> None:
        if not self.closed:
            for fd in (self._woken, self._wake):
                with contextlib.suppress(OSError):
                    os.close(fd)
        super().close()  # fd 0 is not this stream's to close

    def text(self) -> io.TextIOWrapper:
        """This stream as the lines of text the framing reads (what ``open(0, ...)`` gave:
        UTF-8, an undecodable byte replaced, universal newlines)."""
        return io.TextIOWrapper(io.BufferedReader(self), encoding="utf-8", errors="replace")


class StopSignals:
    """SIGTERM and SIGINT recorded from the start of the command, before the MCP SDK's long
    import: a stop requested then is obeyed before anything is served, never a traceback (a
    ``KeyboardInterrupt``) nor a death by the signal's default action (exit 143, a line on
    stdout cut short). While the session runs the event loop's own receiver takes them
    (``mcp_bridge.serve``); ``install`` again after it, for the last moments of the process."""

    def __init__(self) -> None:
        self.requested = False

    def install(self) -> None:
        for sig in STOP_SIGNALS:
            signal.signal(sig, self._handle)
        # a process inherits the signals its parent's thread blocked: make sure they reach it
        signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)

    def _handle(self, sig: int, frame: FrameType | None) -> None:
        self.requested = True

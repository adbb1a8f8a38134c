"""Writing the store's metadata so that a crash never leaves half a file, and the lock that
serializes the operations changing a context (and keeps readers out while one runs)."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

# what making a file answers in a store this process may not write (a read-only mount, a
# directory of another user's)
_UNWRITABLE = (errno.EROFS, errno.EACCES, errno.EPERM)
_UNLOCKED = -1  # the descriptor of a read that could take no lock


@contextlib.contextmanager
def _written(path: Path, data: bytes) -> Iterator[str]:
    """``data`` in a synced temporary file beside ``path``, removed afterwards unless the caller
    renamed it into place."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
            stream.flush()
            os.fsync(stream.fileno())
        yield temp
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)


def write_atomic(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data``: a reader sees the old file or the new one, never part."""
    with _written(path, data) as temp:
        os.replace(temp, path)


def create_exclusive(path: Path, data: bytes) -> bool:
    """Write ``path`` whole unless it exists (False then); a link is atomic and refuses an
    existing name, so two creators cannot both win."""
    with _written(path, data) as temp:
        try:
            os.link(temp, path)
        except FileExistsError:
            return False
    return True


def json_bytes(document: Any) -> bytes:
    return (json.dumps(document, ensure_ascii=False, indent=2) + "\n").encode()


def json_lines(documents: Iterable[Any]) -> bytes:
    return b"".join(json.dumps(d, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"
                    for d in documents)


class ContextLock:
    """An ``fcntl`` lock on one context: exclusive for a command changing it, shared for one
    reading it (readers run together, never beside a change). Re-entrant within one object (a
    restore snapshots and publishes under the lock it already holds: a second ``flock`` on
    another descriptor of the same file would wait for itself); a block inside another holds
    the outer block's lock, which must then be exclusive if the inner one changes."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._depth = 0
        self._fd = -1
        self._shared = False

    @property
    def depth(self) -> int:
        """How many ``held`` blocks of this object are open (1: the outermost)."""
        return self._depth

    def _open(self, shared: bool) -> int:
        """The lock file, made if it is missing; a reader opens it read-only (a store on a
        read-only mount can be read). A reader that cannot make it (a context made before it
        existed, never changed since, in a store this process may not write) reads unlocked,
        as every read did before: ``_UNLOCKED``."""
        if shared:
            with contextlib.suppress(FileNotFoundError):
                return os.open(self.path, os.O_RDONLY)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            return os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            if shared and exc.errno in _UNWRITABLE:
                return _UNLOCKED
            raise

    @contextlib.contextmanager
    def held(self, shared: bool = False) -> Iterator[None]:
        if self._depth == 0:
            fd = self._open(shared)
            try:
                if fd != _UNLOCKED:
                    fcntl.flock(fd, fcntl.LOCK_SH if shared else fcntl.LOCK_EX)
            except BaseException:
                os.close(fd)
                raise
            self._fd, self._shared = fd, shared
        elif self._shared and not shared:
            # taking it over would let another reader's change in between: a caller's mistake
            raise RuntimeError("a change inside a read of the same context")
        self._depth += 1
        try:
            yield
        finally:
            self._depth -= 1
            if self._depth == 0:
                fd, self._fd = self._fd, -1
                if fd != _UNLOCKED:
                    os.close(fd)  # closing the descriptor releases the lock

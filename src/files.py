"""Files written whole: an export replaces its target only once it is complete."""

from __future__ import annotations

import os
import secrets
from pathlib import Path
from types import TracebackType
from typing import IO, Any


class Replacing:
    """A new file beside ``target`` that replaces it when the ``with`` block ends without an
    error, and is removed otherwise: a write that fails or is interrupted leaves ``target`` as
    it was, never half of it (half a hash-chained export reads as a shorter whole). A target
    that is not a regular file (``/dev/stdout``, a pipe) is written as it is. Opening raises
    ``OSError`` at once, before any work is done for the file."""

    def __init__(self, target: str | Path, binary: bool = False) -> None:
        final = Path(os.path.realpath(target))
        self._final = final
        self._special = final.exists() and not final.is_file()
        self._path = final if self._special else final.with_name(
            f".{final.name}.{secrets.token_hex(4)}.partial")
        mode = ("w" if self._special else "x") + ("b" if binary else "")
        self.stream: IO[Any] = self._path.open(mode, encoding=None if binary else "utf-8")

    def __enter__(self) -> IO[Any]:
        return self.stream

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        try:
            self.stream.close()
            if kind is None and not self._special:
                self._path.replace(self._final)
        finally:
            if not self._special:
                self._path.unlink(missing_ok=True)

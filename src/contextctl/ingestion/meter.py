"""How far the reading of one file has come, for the reading bar: its parse and its cut into
passages each say how much of their work is done, in units of their own (Markdown slices, PDF
pages, messages, characters of passages), and the bar advances by that share of the file's bytes.
The bar advances in all by exactly the bytes the file was counted with, whatever happens."""

from __future__ import annotations

from collections.abc import Callable

Done = Callable[[int, int], None]  # (units done, units in all) of a parse or a cut
STEP = 1 << 16  # bytes: a smaller move waits for the next, so a small file is one move


def unreported(done: int, total: int) -> None:
    """For a parse or a cut that no bar watches."""


class FileMeter:
    """One file's bytes on the reading bar: the first ``parse_share`` of them move as the file
    is parsed, the rest as its blocks are cut into passages; ``finish`` moves what is left (a
    file set aside, or whose work was not reported to its end)."""

    def __init__(self, advance: Callable[[int], None], size: int, parse_share: float) -> None:
        self._advance = advance
        self._size = size
        self._parsed = round(size * parse_share)  # the bytes the parse stands for
        self._due = 0  # the bytes the work done so far stands for
        self._shown = 0  # the bytes the bar was advanced by

    def parsing(self, done: int, total: int) -> None:
        self._reach(0, self._parsed, done, total)

    def cutting(self, done: int, total: int) -> None:
        self._reach(self._parsed, self._size, done, total)

    def finish(self) -> None:
        self._due = self._size
        self._show()

    def _reach(self, start: int, end: int, done: int, total: int) -> None:
        due = start + (end - start) * min(done, total) // total if total > 0 else end
        if due > self._due:  # never back (a unit counted twice), never past its stage
            self._due = due
            if self._due - self._shown >= STEP:
                self._show()

    def _show(self) -> None:
        if self._due > self._shown:
            self._advance(self._due - self._shown)
            self._shown = self._due

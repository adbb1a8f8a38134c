"""Where phrases first occur as runs of a text's tokens, many phrases over one text at once.

A pack looks for every term and alias of its context set (up to 10,500 phrases of up to 100
tokens) in its task (up to 2,000 tokens). Comparing a slice at every position cost the task's
length times the phrase's for each phrase: seconds of CPU for one pack, under the interpreter's
lock. Here the text's tokens become fixed-width codes once; for each length some phrase has, the
windows of that length are hashed once, each phrase of it is its codes' hash looked up among
them and confirmed code by code, and the windows are dropped before the next length. The work
is the text's length for each distinct phrase length (at most 100) plus the phrases' own
tokens, and one length's windows are held at a time; a hash two windows share costs a look at
the windows with it, never a wrong answer.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from itertools import repeat

_CODE = "I"  # a token's code, an unsigned int
_WIDTH = array(_CODE).itemsize


class _Windows:
    """The runs of one length: each one's hash, and the first index of each hash."""

    def __init__(self, data: bytes, n: int) -> None:
        self.data, self.size = data, n * _WIDTH
        self.hashes = [hash(data[i:i + self.size])
                       for i in range(0, len(data) - self.size + 1, _WIDTH)]
        # later windows written first, so each hash keeps its first index
        self.firsts = dict(zip(reversed(self.hashes), range(len(self.hashes) - 1, -1, -1),
                               strict=True))

    def first(self, key: bytes) -> int:
        wanted = hash(key)
        at = self.firsts.get(wanted)
        if at is None or self._run(at) == key:
            return -1 if at is None else at
        return next((i for i, h in enumerate(self.hashes) if h == wanted and self._run(i) == key),
                    -1)

    def _run(self, at: int) -> bytes:
        return self.data[at * _WIDTH:at * _WIDTH + self.size]


def first_runs(tokens: Sequence[str], phrases: Sequence[Sequence[str]]) -> list[int]:
    """For each phrase, the first index where it is a contiguous run of ``tokens``; -1 when it
    is not there (an empty phrase never is)."""
    codes: dict[str, int] = {}
    data = array(_CODE, (codes.setdefault(t, len(codes)) for t in tokens)).tobytes()
    found = [-1] * len(phrases)
    by_length: dict[int, list[tuple[int, bytes]]] = {}
    for at, phrase in enumerate(phrases):
        coded = list(map(codes.get, phrase, repeat(-1)))
        if phrase and len(phrase) <= len(tokens) and -1 not in coded:  # else: not there
            by_length.setdefault(len(phrase), []).append((at, array(_CODE, coded).tobytes()))
    for n, keys in by_length.items():
        windows = _Windows(data, n)
        for at, key in keys:
            found[at] = windows.first(key)
    return found

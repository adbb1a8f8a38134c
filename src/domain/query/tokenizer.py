"""The query tokenizer (spec 5.2): Unicode lowercasing, then maximal runs of letters and digits.

A letter is any character of Unicode general category L*, a digit one of category Nd. The regex
finds runs of alphanumerics (which also admits other numerics such as ``²`` or ``Ⅻ``); the rare
non-ASCII run is then split again at every character that is neither a letter nor a Nd digit.
"""

from __future__ import annotations

import re

_ALNUM_RUN = re.compile(r"[^\W_]+")


def tokenize(text: str) -> list[str]:
    """The tokens of ``text`` in order, duplicates kept."""
    runs = _ALNUM_RUN.findall(text.lower())
    if all(run.isascii() for run in runs):
        return runs
    tokens: list[str] = []
    for run in runs:
        if run.isascii():
            tokens.append(run)
        else:
            tokens.extend(_split_run(run))
    return tokens


def _split_run(run: str) -> list[str]:
    """Split a run at characters that are numeric but neither a letter nor a decimal digit."""
    parts: list[str] = []
    start = 0
    for i, char in enumerate(run):
        if not (char.isalpha() or char.isdecimal()):
            if i > start:
                parts.append(run[start:i])
            start = i + 1
    if start < len(run):
        parts.append(run[start:])
    return parts

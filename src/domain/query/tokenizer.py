"""The query tokenizer (spec 5.2): Unicode lowercasing, then maximal runs of letters and digits.

A letter is any character of Unicode general category L*, a digit one of category Nd. ASCII text
(the common case) takes a fast path: every other byte becomes a space and the text is split.
Other text goes through a regex for runs of alphanumerics (which also admits numerics such as
``²`` or ``Ⅻ``); such a run is then split again at every character that is neither a letter nor
a Nd digit.
"""

from __future__ import annotations

import re

_ALNUM_RUN = re.compile(r"[^\W_]+")
_ASCII_SEPARATORS = bytes(b if chr(b).isascii() and chr(b).isalnum() else 0x20
                          for b in range(256))


def tokenize(text: str) -> list[str]:
    """The tokens of ``text`` in order, duplicates kept."""
    lowered = text.lower()
    if lowered.isascii():
        return lowered.encode("ascii").translate(_ASCII_SEPARATORS).decode("ascii").split()
    tokens: list[str] = []
    for run in _ALNUM_RUN.findall(lowered):
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

"""Replace what varies between runs (timestamps, digests, ids, ports) with fixed placeholders."""

from __future__ import annotations

import re

_RULES = (
    (re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?Z"), "<TIME>"),
    (re.compile(r"http://127\.0\.0\.1:\d+"), "<URL>"),
    (re.compile(r"bdk_[0-9a-f]{16}_[A-Za-z0-9_-]{43}"), "<TOKEN>"),
)


def normalise(text: str, columns: bool = True) -> str:
    for pattern, placeholder in _RULES:
        text = pattern.sub(placeholder, text)
    if not columns:
        return text
    # Columns widen with the placeholders' lengths: compare cells, not runs of spaces.
    return "\n".join(re.sub(r" {2,}", "  ", line).rstrip() for line in text.splitlines()) + "\n"

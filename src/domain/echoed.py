"""A caller's value shown back in an error (a key in a path, a name in a message), cut to a
bounded length: a refusal names what it refuses, but a mebibyte-long key or name sent back
whole made the answer as large as the body, once per violation (decision 0059). Every message
of the ``/v1`` and agent APIs that quotes a caller's value quotes it through here. No field,
parameter, id or collection name the service accepts is longer than ``ECHO`` (63 characters
at most), so such a cut value was never a valid one; a value whose own rule allows more (a
definition term, a Kubernetes class name, a record id) shows its first ``ECHO`` code points,
enough to tell which one is meant."""

from __future__ import annotations

from context_service.domain.values import quote

ECHO = 64  # code points of a caller's value kept in a path or a message
LONGEST = 200  # code points of a whole path or message holding one (no rule writes 100)
ELLIPSIS = "\u2026"


def cut(text: str, limit: int = ECHO) -> str:
    """``text``, or its first ``limit`` code points and an ellipsis."""
    return text if len(text) <= limit else text[:limit] + ELLIPSIS


def quoted(text: str) -> str:
    """``text`` cut, written as a JSON string (agent-context-api.md §1.3)."""
    return quote(cut(text))

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


# code points of another program's message (the database's primary message) once its quoted
# stretches are cut: a backstop for a value it quotes some other way, or that holds a quote
TELLING = 1000


def told(message: str) -> str:
    """Another program's message, as the database's primary message: it quotes what it
    refused in double quotes (``invalid input syntax for type integer: "<value>"``), and that
    can be a caller's parameter or a literal of their SQL, whole. Each quoted stretch is cut
    as a caller's value is, and the whole message to ``TELLING`` code points."""
    pieces = message.split('"')
    # the odd pieces of a split at each quote are the quoted stretches
    return cut('"'.join(cut(p) if place % 2 else p for place, p in enumerate(pieces)), TELLING)

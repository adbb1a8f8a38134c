"""Read ports of packs (agent-context-api 7.3-7.6): the position a pack reads, the namespace
folded to it, the corpus of its usable indexes, and the features of texts.

Implemented over PostgreSQL and the log by adapters; the pack routes and the engine see only
these Protocols and the shapes of ``domain.pack.model``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from context_service.domain.pack.model import (
    CollectionAt,
    Corpus,
    NamespaceAt,
    Retrieval,
    TokenCount,
)


class PackInputReads(Protocol):
    """Where a pack reads the log (7.3) and what the namespace was there."""

    def resolve(self, namespace: str, head: int | None,
                system_time: datetime | None) -> tuple[int, datetime]:
        """The position P and resolved system time of a pack.

        Without ``system_time``: the latest pack-input event of the namespace at or before
        ``head`` (the log head when the request began; None: no bound) and that event's
        recorded time. With ``system_time`` = S: the greatest position of a pack-input event of
        the namespace recorded at or before S, and S itself (in UTC). P = 0 (and, without S,
        ``1970-01-01T00:00:00Z``) when the namespace has none.
        """

    def namespace_at(self, namespace: str, position: int) -> NamespaceAt:
        """The namespace folded to ``position`` with the write model's ``evolve``: every
        context (live or not, by name) and every context set (by id) created by then.
        ``position`` 0 gives an empty namespace."""


class CorpusLoading(Exception):
    """An index's corpus was not loaded by the caller's deadline (it goes on loading)."""


class CorpusReads(Protocol):
    """The corpus of the usable indexes (7.4), with token counts from the features of the
    published texts (never computed per request); cached by publication position."""

    def corpus(self, collections: Sequence[CollectionAt],
               until: float | None = None) -> Corpus:
        """A ``CollectionCorpus`` per usable collection of ``collections`` (others left out),
        keyed by collection name. ``until`` (a ``time.monotonic`` instant): an index not
        loaded by then raises ``CorpusLoading`` and is loaded on in the background."""


@dataclass(frozen=True, slots=True)
class PackPorts:
    """What the composition root hands the pack routes."""

    inputs: PackInputReads
    corpus: CorpusReads
    retrieval: Retrieval  # lexical in-process over cached postings, vector in PostgreSQL
    count_tokens: TokenCount  # for generated texts (graph facts, set items)

    def wait_views(self) -> tuple[str, ...]:
        """The views a pack at the head reads (wait for them like any read-your-writes)."""
        return ("pack_inputs", "passage_features", "agent_data")

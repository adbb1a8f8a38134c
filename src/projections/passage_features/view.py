"""The write interface of ``passage_features``, and how a projection reads an index's records."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Protocol

from context_service.domain.context.events import QueryIndexPublished, QueryRecord
from context_service.domain.stream import Recorded
from context_service.projections.passage_features.features import Feature


class PublishedIndexes(Protocol):
    def records(self, recorded: Recorded) -> tuple[QueryRecord, ...]:
        """The full records of a ``QueryIndexPublished`` (its parts' records when multi-part)."""


class PassageFeaturesView(PublishedIndexes, Protocol):
    def known(self, hashes: Iterable[bytes]) -> dict[bytes, bool]:
        """The stored hashes among ``hashes``, each with whether it has a vector and its
        pieces (a text stored with a vector alone is embedded again, and gains its pieces)."""

    def store(self, features: Mapping[bytes, Feature]) -> None:
        """Add features (a vector is added to a text stored without one; nothing else
        changes: features are a pure function of the text)."""


def published(recorded: Recorded) -> QueryIndexPublished | None:
    event = recorded.event
    if recorded.stream.kind == "context" and isinstance(event, QueryIndexPublished):
        return event
    return None

"""What ``agent_data`` keeps per context, its passages and documents, and the view's writes."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Protocol

import msgspec

from context_service.projections.passage_features.features import Feature
from context_service.projections.passage_features.view import PublishedIndexes


class AgentCollection(msgspec.Struct, frozen=True, kw_only=True):
    namespace: str
    name: str
    type: str
    current_revision: str = ""
    index_revision: str = ""  # "" when no index was published in this generation
    publication: int = 0  # log position of the QueryIndexPublished of the index; 0 when none

    @property
    def usable(self) -> bool:
        return self.publication > 0 and self.index_revision == self.current_revision


class PassageRow(msgspec.Struct, frozen=True, kw_only=True):
    ord: int
    collection: str
    record_id: str
    document_id: str
    text_hash: bytes
    tokens: int
    valid_from: datetime | None
    valid_to: datetime | None
    fact_key: str
    embedding: bytes | None  # as ``Feature.vector``
    # what the ``agent.passages`` view shows besides (spec 11.3)
    title: str = ""
    text: str = ""
    keywords: tuple[str, ...] = ()
    supersedes: tuple[str, ...] = ()


class DocumentRow(msgspec.Struct, frozen=True, kw_only=True):
    document_id: str
    text_hash: bytes
    tokens: int
    passages: int
    file: str = ""  # "" for a document of a record without ``file``


class AgentDataView(PublishedIndexes, Protocol):
    def load(self, stream_ids: Iterable[uuid.UUID]) -> dict[uuid.UUID, AgentCollection]: ...

    def save(self, stream_id: uuid.UUID, collection: AgentCollection) -> None: ...

    def remove(self, stream_id: uuid.UUID, publication: int) -> None:
        """Forget the context (and the passages and documents of ``publication``)."""

    def drop_index(self, publication: int) -> None: ...

    def known(self, hashes: Iterable[bytes]) -> dict[bytes, bool]:
        """The hashes ``passage_features`` holds among ``hashes``, each with whether it has a
        vector."""

    def features(self, hashes: Iterable[bytes]) -> dict[bytes, Feature]:
        """Stored features of these texts (``passage_features``)."""

    def store_index(self, publication: int, passages: Sequence[PassageRow],
                    documents: Sequence[DocumentRow]) -> None: ...

    def store_features(self, features: Mapping[bytes, Feature]) -> None:
        """Features computed here because ``passage_features`` lacked them (a rebuild of
        agent_data alone over a features table behind it)."""

"""agent_data: folds context events into each live context's latest index, laid out as packs
at the head read it: the first record per id with its features (the embedding copied onto the
row for the vector scan) and the documents with their token counts.

Features come from ``passage_features`` (applied before this view in the same worker and
transaction), handed over in memory with the index's texts when it has just computed them,
else read back; a text the features table lacks is computed and stored here, so this view never
writes a count or vector that the features table would not hold.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence

import msgspec

from context_service.domain.context.events import (
    ContextAdopted,
    ContextCreated,
    ContextDeleted,
    QueryIndexPublished,
    RevisionPublished,
)
from context_service.domain.stream import Recorded
from context_service.projections.agent_data.view import (
    AgentCollection,
    AgentDataView,
    DocumentRow,
    PassageRow,
)
from context_service.projections.base import by_stream
from context_service.projections.passage_features.features import (
    Feature,
    Handover,
    PublishedTexts,
    TextFeatures,
)
from context_service.projections.passage_features.projection import compute

_RELEVANT = (ContextCreated, ContextAdopted, ContextDeleted, QueryIndexPublished,
             RevisionPublished)


def step(collection: AgentCollection | None, recorded: Recorded) -> AgentCollection | None:
    event = recorded.event
    match event:
        case ContextCreated():
            revision = event.revision.id if event.revision is not None else ""
            return AgentCollection(namespace=event.namespace, name=event.name, type=event.type,
                                   current_revision=revision)
        case ContextAdopted():
            return AgentCollection(namespace=event.namespace, name=event.name, type=event.type,
                                   current_revision=event.current_revision)
        case ContextDeleted():
            return None
        case RevisionPublished() if collection is not None:
            return msgspec.structs.replace(collection, current_revision=event.revision.id)
        case QueryIndexPublished() if collection is not None:
            return msgspec.structs.replace(collection, index_revision=event.revision,
                                           publication=recorded.position)
    return collection


class AgentData:
    name = "agent_data"
    tables: tuple[str, ...] = ("agent_collections", "agent_passages", "agent_documents",
                               "agent_vectors", "agent_data.collections", "agent_data.passages",
                               "agent_data.documents")

    def __init__(self, features: TextFeatures, handover: Handover | None = None) -> None:
        self.features = features
        self.handover = handover if handover is not None else Handover()

    def apply(self, view: AgentDataView, batch: Sequence[Recorded]) -> None:
        touched = by_stream(batch, "context", _RELEVANT)
        if not touched:
            return
        current = view.load(touched.keys())
        for stream_id, events in touched.items():
            before = current.get(stream_id)
            after: AgentCollection | None = before
            laid: Recorded | None = None  # the last publication of the batch still standing
            for recorded in events:
                after = step(after, recorded)
                if isinstance(recorded.event, QueryIndexPublished) and after is not None:
                    laid = recorded
                elif not isinstance(recorded.event, RevisionPublished):
                    laid = None
            self._write(view, stream_id, before, after, laid)

    def _write(self, view: AgentDataView, stream_id: uuid.UUID, before: AgentCollection | None,
               after: AgentCollection | None, laid: Recorded | None) -> None:
        old = before.publication if before is not None else 0
        if after is None:
            if before is not None:
                view.remove(stream_id, old)
            return
        if old and after.publication != old:
            view.drop_index(old)
        if laid is not None:
            passages, docs = self._layout(view, laid)
            view.store_index(laid.position, passages, docs)
        if after != before:
            view.save(stream_id, after)

    def _layout(self, view: AgentDataView,
                recorded: Recorded) -> tuple[list[PassageRow], list[DocumentRow]]:
        collection = recorded.stream.key
        index = self.handover.take(recorded.position)
        if index is None:
            index = PublishedTexts().add_index(collection, view.records(recorded))
        stored = self._features(view, index.texts)
        rows = []
        document_of = {r.id: doc for doc, (members, _) in index.documents.items()
                       for r in members}
        for ord_, record in index.passages:
            own = index.own[ord_]
            rows.append(PassageRow(
                ord=ord_, collection=collection, record_id=record.id,
                document_id=document_of[record.id], text_hash=own,
                tokens=stored[own].tokens, valid_from=record.valid_from,
                valid_to=record.valid_to, fact_key=record.fact_key,
                embedding=stored[index.embedded[ord_]].vector,
                title=record.title, text=record.text, keywords=record.keywords,
                supersedes=record.supersedes))
        doc_rows = []
        for doc, (members, _) in index.documents.items():
            key = index.document_hashes[doc]
            doc_rows.append(DocumentRow(document_id=doc, text_hash=key,
                                        tokens=stored[key].tokens, passages=len(members),
                                        file=members[0].file))
        return rows, doc_rows

    def _features(self, view: AgentDataView, texts: PublishedTexts) -> dict[bytes, Feature]:
        """The features of an index's texts: handed over, else stored, else computed (and
        stored, with any the features table lacks)."""
        handed = self.handover.features
        have = {h: f for h in texts.hashes if (f := handed.get(h)) is not None}
        held = view.known(texts.hashes)  # what the features table holds
        unread = [h for h in held if h not in have]
        if unread:
            have.update(view.features(unread))
        have.update(compute(self.features, texts,
                            {h: f.vector is not None for h, f in have.items()}))
        lacking = {h: have[h] for h in texts.hashes
                   if h not in held or (not held[h] and have[h].vector is not None)}
        if lacking:
            view.store_features(lacking)
        return have

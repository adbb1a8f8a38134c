"""Untrusted items (§7.7, §7.11): passages, whole documents and graph facts, with their sources,
validity and flags. Shared by packing and by replays, which rebuild items the same way."""

from __future__ import annotations

from context_service.domain.pack.graph import DERIVED_FROM, Fact
from context_service.domain.pack.items import (
    EVIDENCE,
    FRAMING_TOKENS,
    UNKNOWN_FLAGS,
    UNTRUSTED,
    WHOLE_DOCUMENT,
    Item,
    Source,
)
from context_service.domain.pack.model import Corpus, Document, Passage, TokenCount, document_id
from context_service.domain.pack.records import Judge, document_flags


def passage_id(ref: str) -> str:
    return f"psg:{ref}"


def passage_source(p: Passage) -> Source:
    return Source(kind="passage", collection_id=p.collection,
                  document_id=document_id(p.collection, p.record), record_id=p.record.id,
                  revision=p.revision)


def passage_item(p: Passage, judge: Judge, cls: str = EVIDENCE, score: int = 0,
                 requirement_ids: tuple[str, ...] = (),
                 absorbed: tuple[str, ...] = ()) -> Item:
    return Item(id=passage_id(p.ref), cls=cls, trust=UNTRUSTED, text=p.record.text,
                tokens=p.tokens + FRAMING_TOKENS, score=score, source=passage_source(p),
                flags=judge.flags(p), requirement_ids=requirement_ids,
                absorbed=tuple(passage_id(r) for r in absorbed),
                concerns=frozenset((p.collection,)))


def document_item(d: Document, corpus: Corpus, judge: Judge, score: int = 0) -> Item:
    c = corpus[d.collection]
    passages = [c.by_id[r] for r in d.record_ids]
    return Item(id=f"doc:{d.document_id}", cls=WHOLE_DOCUMENT, trust=UNTRUSTED, text=d.text,
                tokens=d.tokens + FRAMING_TOKENS, score=score,
                source=Source(kind="document", collection_id=d.collection,
                              document_id=d.document_id, revision=c.revision),
                flags=document_flags(passages, judge), concerns=frozenset((d.collection,)))


def fact_source(fact: Fact, anchor: Passage | None, corpus: Corpus) -> Source:
    """The anchor record's source (``derived_from``: its collection and revision only)."""
    if fact.kind == DERIVED_FROM or anchor is None:
        return Source(kind="graph", collection_id=fact.collection,
                      revision=corpus[fact.collection].revision)
    return Source(kind="graph", collection_id=anchor.collection,
                  document_id=document_id(anchor.collection, anchor.record),
                  record_id=anchor.record.id, revision=anchor.revision)


def fact_item(fact: Fact, anchor: Passage | None, corpus: Corpus, count: TokenCount,
              score: int = 0) -> Item:
    return Item(id=fact.id, cls=EVIDENCE, trust=UNTRUSTED, text=fact.text,
                tokens=count(fact.text) + FRAMING_TOKENS, score=score,
                source=fact_source(fact, anchor, corpus), flags=UNKNOWN_FLAGS,
                concerns=fact.collections)

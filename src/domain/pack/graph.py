"""Graph facts (§5.4): short deterministic statements derived from revision provenance,
supersession and contradictions, their ``gph:`` ids, and which are effective at T."""

from __future__ import annotations

import hashlib

import msgspec

from context_service.domain.pack.model import CollectionAt, Corpus, Passage
from context_service.domain.pack.records import Judge, started
from context_service.domain.values import format_timestamp

DERIVED_FROM, SUPERSEDES, CONTRADICTS = "derived_from", "supersedes", "contradicts"
KIND_ORDER = {DERIVED_FROM: 0, SUPERSEDES: 1, CONTRADICTS: 2}


class Fact(msgspec.Struct, frozen=True, kw_only=True):
    """One effective fact. ``records`` are the references it can anchor at (empty for
    ``derived_from``, which anchors at any record of ``collection``); ``collections`` are the
    collections it names (the release check reads them)."""

    id: str
    kind: str
    text: str
    collection: str  # derived_from: the collection; otherwise the first record's collection
    records: tuple[str, ...] = ()
    collections: frozenset[str] = frozenset()

    @property
    def order(self) -> tuple[int, str]:
        """Facts anchored at the same candidate follow in this order."""
        return (KIND_ORDER[self.kind], self.id)


def fact_id(kind: str, a: str, b: str) -> str:
    """``gph:`` + 24 hex of SHA-256 over ``<kind> NUL <a> NUL <b>``."""
    return "gph:" + hashlib.sha256(f"{kind}\0{a}\0{b}".encode()).hexdigest()[:24]


def _quoted(text: str) -> str:
    return msgspec.json.encode(text).decode()


def derived_from(c: CollectionAt) -> Fact | None:
    """The provenance fact of a collection's current revision; None without sources."""
    if not c.sources:
        return None
    sources = ", ".join(f"{_quoted(s.context)} revision {s.revision[:12]}" for s in c.sources)
    text = (f"Collection {_quoted(c.name)} revision {c.current_revision[:12]} "
            f"was derived from {sources}.")
    return Fact(id=fact_id(DERIVED_FROM, c.name, c.current_revision), kind=DERIVED_FROM,
                text=text, collection=c.name, collections=frozenset((c.name,)))


def supersedes(b: Passage, a: Passage) -> Fact:
    """``"<ref B>" supersedes "<ref A>" from <B.validFrom>.``"""
    since = (f" from {format_timestamp(b.record.valid_from)}"
             if b.record.valid_from is not None else "")
    text = f"{_quoted(b.ref)} supersedes {_quoted(a.ref)}{since}."
    return Fact(id=fact_id(SUPERSEDES, b.ref, a.ref), kind=SUPERSEDES, text=text,
                collection=b.collection, records=(b.ref, a.ref),
                collections=frozenset((b.collection,)))


def contradicts(ref_a: str, ref_x: str, fact_key: str) -> Fact:
    """``"<ref A>" and "<ref X>" state different things for fact "<factKey>".``"""
    a, x = sorted((ref_a, ref_x))
    text = f"{_quoted(a)} and {_quoted(x)} state different things for fact {_quoted(fact_key)}."
    return Fact(id=fact_id(CONTRADICTS, a, x), kind=CONTRADICTS, text=text,
                collection=a.partition("/")[0], records=(a, x),
                collections=frozenset((a.partition("/")[0], x.partition("/")[0])))


def facts_of_record(p: Passage, corpus: Corpus, judge: Judge) -> list[Fact]:
    """The ``supersedes`` and ``contradicts`` facts effective at T that involve record ``p``."""
    c = corpus[p.collection]
    out: list[Fact] = []
    for b_id in c.superseders.get(p.record.id, ()):  # p is A
        b = c.by_id[b_id]
        if started(b.record, judge.t):
            out.append(supersedes(b, p))
    if started(p.record, judge.t):  # p is B
        for a_id in dict.fromkeys(p.record.supersedes):
            a = c.by_id.get(a_id)
            if a is not None:
                out.append(supersedes(p, a))
    out.extend(contradicts(p.ref, x, p.record.fact_key) for x in judge.contradicts(p))
    return out

"""pack-engine/2's hybrid list in plain Python, rule by rule, over a corpus and given cosines:
what the unit tests read, and the oracle the service's vectorised list is checked against."""

from __future__ import annotations

from collections.abc import Mapping

from context_service.domain.pack.model import Corpus, Passage, Scored, document_id
from context_service.domain.pack.reference import ReferenceRetrieval
from context_service.domain.pack.retrieval2.analyzer import (
    Stem,
    query_terms,
    record_bag,
    record_terms,
)
from context_service.domain.pack.retrieval2.bm25 import bm25
from context_service.domain.pack.retrieval2.feedback import (
    FEEDBACK_HITS,
    expansion,
    feedback_query,
    informative,
)
from context_service.domain.pack.retrieval2.fusion import (
    COSINE_UNIT,
    admitted,
    cosine_moments,
    fused,
    lexical_share,
)
from context_service.domain.pack.retrieval2.informative import factors, information, weighed
from context_service.domain.pack.retrieval2.neighbours import (
    asks,
    neighbours_in_order,
    with_document_prior,
    with_neighbours,
)
from context_service.domain.query.tokenizer import tokenize
from context_service.domain.score import SCALE, to_micros

LIST_LIMIT = 200


def lexical_scores(query: str, corpus: Corpus, eligible: frozenset[str] | None,
                   stem: Stem, related: frozenset[str] = frozenset(),
                   ) -> tuple[list[Passage], list[float], list[float]]:
    """Every record of the corpus (collections by name, then publication order), its first
    BM25 (rule 2) and its lexical score after rules 3-5 (0 for ineligible records). A
    collection's information (rule 4b) is over its own records; ``related`` names the related
    documents (``document_id``s: rule 6b's test, an outcome of the vectors, given like the
    cosines)."""
    passages = [p for name in sorted(corpus) for p in corpus[name].passages]
    keep = [eligible is None or document_id(p.collection, p.record) in eligible
            for p in passages]
    records = [record_terms(p.record.title, p.record.keywords, p.record.text, stem)
               for p in passages]
    query_weights = query_terms(query, stem)
    first = [s if k else 0.0
             for s, k in zip(bm25(dict(query_weights), records), keep, strict=True)]
    matched = sorted((i for i, s in enumerate(first) if s > 0),
                     key=lambda i: (-first[i], passages[i].collection, passages[i].record.id))
    hits = matched[:FEEDBACK_HITS] if informative(len(matched)) else []
    scores = first
    if hits:
        bags = [(first[i], record_bag(passages[i].record.title, passages[i].record.keywords,
                                      passages[i].record.text, stem)) for i in hits]
        weighted = feedback_query(query_weights, expansion(bags))
        new_terms = weighted.keys() - query_weights.keys()
        scores = [s if k else 0.0
                  for s, k in zip(bm25(weighted, records, new_terms), keep, strict=True)]
    documents = {d: i for i, d in enumerate(
        dict.fromkeys(document_id(p.collection, p.record) for p in passages))}
    coherent = [d in related for d in documents]
    numbers = [documents[document_id(p.collection, p.record)] for p in passages]
    previous, following = neighbours_in_order(numbers, [bool(p.record.file) for p in passages])
    info: list[float] = []  # over each collection's own records (a slice of ``records``)
    for name in sorted(corpus):
        info += information(records[len(info):len(info) + len(corpus[name].passages)])
    turns = with_neighbours(scores, previous, following, [asks(p.record.text) for p in passages])
    return passages, first, with_document_prior(
        weighed(turns, factors(info, numbers, coherent)), numbers)


class ReferenceHybrid(ReferenceRetrieval):
    """``cosines`` maps a query to the cosine of each record reference (a multiple of
    ``COSINE_UNIT``, as the service's are; a record it does not name has cosine 0);
    ``related`` names the documents rule 6b's test finds related (``document_id``s)."""

    def __init__(self, stem: Stem,
                 cosines: Mapping[str, Mapping[str, float]] | None = None,
                 related: frozenset[str] = frozenset()) -> None:
        super().__init__(cosines)
        self.stem = stem
        self.related = related

    def hybrid(self, query: str, corpus: Corpus, eligible: frozenset[str] | None,
               requirement: bool) -> list[Scored]:
        passages, _, scores = lexical_scores(query, corpus, eligible, self.stem,
                                             self.related)
        given = self.cosines.get(query, {})
        cosines = [given.get(p.ref, 0.0) for p in passages]
        mean, deviation = cosine_moments(round(c / COSINE_UNIT) for c in cosines)
        top = max(scores, default=0.0)
        tokens = frozenset(tokenize(query))
        keyed = []
        for p, s, c in zip(passages, scores, cosines, strict=True):
            if eligible is not None and document_id(p.collection, p.record) not in eligible:
                continue
            if requirement and not shares_token(p, tokens):
                continue
            share = lexical_share(s, top)
            micros = to_micros(fused(share, c, mean, deviation))
            if admitted(s, c, mean, deviation, micros / SCALE):
                keyed.append((-micros, p.collection, p.record.id, to_micros(share)))
        keyed.sort()
        return [Scored(c, r, -neg / SCALE, share / SCALE)
                for neg, c, r, share in keyed[:LIST_LIMIT]]


def shares_token(p: Passage, tokens: frozenset[str]) -> bool:
    """Whether the record's §7.5 BM25 for a query of these tokens is positive."""
    r = p.record
    return not tokens.isdisjoint((*tokenize(r.title), *tokenize(" ".join(r.keywords)),
                                  *tokenize(r.text)))

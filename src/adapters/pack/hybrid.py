"""pack-engine/2's hybrid list over the cached features (``hybrid_features``): the rules of
``domain.pack.retrieval2`` vectorised over each collection's arrays. Only the query is
analysed, weighted and pooled per request; ``retrieval2.reference`` is the plain-Python oracle
the tests hold it to."""

from __future__ import annotations

import contextlib
import math
from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from concurrent.futures import Executor

import numpy as np
import numpy.typing as npt

from context_service.adapters.pack.hybrid_features import (
    Floats,
    HybridFeatures,
    QueryPieces,
    stem_words,
)
from context_service.adapters.pack.lexical import LexicalIndex, span_positions
from context_service.domain.pack.model import Scored
from context_service.domain.pack.retrieval2.analyzer import query_terms
from context_service.domain.pack.retrieval2.bm25 import K1, B, idf
from context_service.domain.pack.retrieval2.feedback import (
    FEEDBACK_HITS,
    expansion,
    feedback_query,
    informative,
    selective,
)
from context_service.domain.pack.retrieval2.fusion import (
    COSINE_ONLY_MARGIN,
    COSINE_UNIT,
    SPREAD,
    VECTOR_WEIGHT,
    moments,
)
from context_service.domain.pack.retrieval2.neighbours import (
    DOCUMENT_PRIOR_WEIGHT,
    NEIGHBOUR_WEIGHT,
    SECOND_NEIGHBOUR_WEIGHT,
)
from context_service.domain.query import scoring
from context_service.domain.score import SCALE, to_micros

LIST_LIMIT = 200
_SLACK = 1e-6  # raw scores within this of the cut may round to the cut's score

Mask = npt.NDArray[np.bool_]


class Part:
    """One collection of the request: its features, its §7.5 index (eligibility, requirement
    tokens) and the eligible rows."""

    def __init__(self, features: HybridFeatures, index: LexicalIndex,
                 eligible: frozenset[str] | None) -> None:
        self.features = features
        self.index = index
        self.keep: Mask | None = index.mask(eligible) if eligible is not None else None


def bm25(query: Mapping[str, float], parts: Sequence[Part],
         expansion: AbstractSet[str] = frozenset()) -> list[Floats]:
    """Rule 2 for each collection (0 for ineligible records), statistics over all of them; a
    term of ``expansion`` is left out where it is not ``selective`` (rule 3).

    Each collection's postings of every scored term are read at once, in the query's term
    order, and summed per record by ``bincount``, which adds in that order: the same doubles as
    adding term after term, for a cost per collection rather than per term and collection (a
    task of 4,000 characters over 100,000 passages: 5 times faster)."""
    n_records = sum(len(p.features) for p in parts)
    out = [np.zeros(len(p.features), dtype=np.float64) for p in parts]
    if not n_records or not query:
        return out
    avgdl = sum(p.features.total_length for p in parts) / n_records
    if avgdl <= 0:  # no record holds a term (stop words only): nothing can match
        return out
    per_length = K1 * B / avgdl
    terms = list(query)
    spans = [p.features.spans(terms) for p in parts]
    holding = sum((hi - lo for lo, hi in spans), np.zeros(len(terms), dtype=np.int64))
    factor = np.zeros(len(terms), dtype=np.float64)  # w x IDF; 0: the term is not scored
    for i, (term, held) in enumerate(zip(terms, holding.tolist(), strict=True)):
        if held and (term not in expansion or selective(held, n_records)):
            factor[i] = query[term] * idf(n_records, held)
    scored = factor != 0
    for scores, part, (lo, hi) in zip(out, parts, spans, strict=True):
        f = part.features
        at, lengths = span_positions(np.where(scored, lo, 0), np.where(scored, hi, 0))
        if len(at):
            # w idf tf (k1 + 1) / (tf + k1 (1 - b) + k1 b dl / avgdl), in place
            contribution = f.posting_dl[at] * per_length
            contribution += f.posting_base[at]
            np.divide(f.posting_numerator[at], contribution, out=contribution)
            contribution *= np.repeat(factor, lengths)
            scores += np.bincount(f.posting_rows[at], weights=contribution,
                                  minlength=len(scores))
        if part.keep is not None:
            scores[~part.keep] = 0.0
    return out


def _first_hits(scores: Sequence[Floats], parts: Sequence[Part],
                limit: int) -> list[tuple[float, int, int]]:
    """The first ``limit`` positive scores (score, part, row), by score, collection, id."""
    found: list[tuple[float, str, str, int, int]] = []
    for at, (s, part) in enumerate(zip(scores, parts, strict=True)):
        rows = np.flatnonzero(s > 0)
        if len(rows) > limit:
            cut = np.partition(s[rows], -limit)[-limit]
            rows = rows[s[rows] >= cut]
        ids = part.features.record_ids
        found.extend((float(s[r]), part.features.collection, ids[r], at, int(r))
                     for r in rows.tolist())
    found.sort(key=lambda f: (-f[0], f[1], f[2]))
    return [(score, at, row) for score, _, _, at, row in found[:limit]]


def lexical_scores(query: str, parts: Sequence[Part]) -> list[Floats]:
    """Rules 1-5: BM25, feedback, turns, informative passages, the document prior."""
    terms = query_terms(query, stem_words)
    first = bm25(dict(terms), parts)
    matched = sum(int(np.count_nonzero(s > 0)) for s in first)
    hits = _first_hits(first, parts, FEEDBACK_HITS) if informative(matched) else []
    scores = first
    if hits:
        bags = [(score, parts[at].features.bag(row)) for score, at, row in hits]
        weighted = feedback_query(terms, expansion(bags))
        scores = bm25(weighted, parts, weighted.keys() - terms.keys())
    return [in_documents(s, part.features) for s, part in zip(scores, parts, strict=True)]


def in_documents(s: Floats, f: HybridFeatures) -> Floats:
    """Rules 4, 4b and 5 over one collection's scores after feedback: the same operations as
    ``retrieval2.neighbours`` and ``informative``, in the same order (bit for bit)."""
    padded = np.append(s, 0.0)  # row -1 (no neighbour) reads the 0 at the end
    own = s * f.own_weight
    near = np.maximum(f.back_weight * (padded[f.previous] - own),
                      NEIGHBOUR_WEIGHT * (padded[f.following] - own))
    np.maximum(near, 0.0, out=near)
    near += own
    far = np.maximum(padded[f.before2], padded[f.after2])
    far -= near
    np.maximum(far, 0.0, out=far)
    far *= SECOND_NEIGHBOUR_WEIGHT
    far += near
    weighed = far * f.factor
    best = np.zeros(f.n_documents, dtype=np.float64)
    np.maximum.at(best, f.documents, weighed)
    out: Floats = weighed + DOCUMENT_PRIOR_WEIGHT * best[f.documents]
    return out


def cosines(query_ids: Sequence[int], parts: Sequence[Part],
            matrix: npt.NDArray[np.float32]) -> list[Floats]:
    """Rule 6: each collection's cosines with the query (exact: see ``fusion``)."""
    query = QueryPieces(query_ids, matrix)
    return [(part.features.vectors @ part.features.pooled_query(query)).astype(np.float64)
            for part in parts]


def hybrid_list(query: str, parts: Sequence[Part], query_ids: Sequence[int],
                matrix: npt.NDArray[np.float32], requirement: bool,
                beside: Executor | None = None) -> list[Scored]:
    """Rule 7 and the list: the admitted records (``fusion.admitted``), by fused score,
    collection, record id; first 200.

    With ``beside``, rule 6's cosines are computed there while this thread computes rules 1-5:
    its matrix-vector products (memory-bound, a fifth of the list's time over 100,000
    passages) release the interpreter's lock, so they take the other core. The same
    operations either way: the same list."""
    if not parts:
        return []
    pending = None
    if beside is not None:
        with contextlib.suppress(RuntimeError):  # shut down (the service is stopping): here
            pending = beside.submit(cosines, query_ids, parts, matrix)
    lexical = lexical_scores(query, parts)
    cos = pending.result() if pending is not None else cosines(query_ids, parts, matrix)
    units = [np.rint(c / COSINE_UNIT).astype(np.int64) for c in cos]
    n = sum(len(u) for u in units)
    total = sum(int(u.sum()) for u in units)
    squares = sum(int(np.dot(u, u)) for u in units)
    mean, deviation = moments(n, total, squares)
    top = max((float(s.max()) for s in lexical if len(s)), default=0.0)
    fused_all: list[Floats] = []
    keeps: list[Mask] = []
    for s, c, part in zip(lexical, cos, parts, strict=True):
        share = s / top if top > 0 else np.zeros(len(s), dtype=np.float64)
        fused = (share + VECTOR_WEIGHT * (c - mean) / (SPREAD * deviation) if deviation > 0
                 else share)
        keep = (fused > 0) & ((s > 0) | (c - mean >= COSINE_ONLY_MARGIN * deviation))
        if part.keep is not None:
            keep &= part.keep
        if requirement:
            keep &= _sharing_a_token(query, part.index)
        fused_all.append(fused)
        keeps.append(keep)
    chosen = np.concatenate([f[k] for f, k in zip(fused_all, keeps, strict=True)])
    if not len(chosen):
        return []
    floor = -math.inf
    if len(chosen) > LIST_LIMIT:
        floor = float(np.partition(chosen, -LIST_LIMIT)[-LIST_LIMIT]) - _SLACK
    keyed: list[tuple[int, str, str, int]] = []
    for s, fused, keep, part in zip(lexical, fused_all, keeps, parts, strict=True):
        picked = np.flatnonzero(keep & (fused >= floor))
        ids = part.features.record_ids
        shares = (s[picked] / top).tolist() if top > 0 else [0.0] * len(picked)
        for raw, row, share in zip(fused[picked].tolist(), picked.tolist(), shares, strict=True):
            micros = to_micros(raw)
            if micros > 0:
                keyed.append((-micros, part.features.collection, ids[row], to_micros(share)))
    keyed.sort()
    return [Scored(c, r, -neg / SCALE, share / SCALE) for neg, c, r, share in keyed[:LIST_LIMIT]]


def _sharing_a_token(query: str, index: LexicalIndex) -> Mask:
    """The records whose §7.5 BM25 for the query is positive (they share a query token)."""
    mask = np.zeros(len(index), dtype=np.bool_)
    for term in scoring.query_terms(query):
        found = index.posting(term)
        if found is not None:
            mask[found[0]] = True
    return mask

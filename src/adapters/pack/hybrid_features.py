"""What pack-engine/2's hybrid list reads of each record, computed once per publication when the
corpus loader loads an index (``corpus.Cached``) and kept with it: the analyzer's terms as BM25
postings and as each record's bag, each record's document, neighbours, question flag and
information factor (rules 4 and 4b), and each record's pooled, centred vector (taking in its
neighbours' where its document's are related, rule 6b) with the collection's piece weights and
mean vector.

The stems come from PyStemmer (Porter2 ``english``; one stemmer per thread: a stemmer is not
thread-safe), the pieces and rows from the bundled embedding model."""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt
import Stemmer

from context_service.adapters.embedding import piece_counts
from context_service.domain.pack.model import CollectionCorpus
from context_service.domain.pack.retrieval2.analyzer import record_analysis
from context_service.domain.pack.retrieval2.bm25 import K1, B, idf
from context_service.domain.pack.retrieval2.context import (
    CONTEXT_WEIGHT,
    MIN_PAIRS,
    pair_mean,
    related,
)
from context_service.domain.pack.retrieval2.fusion import COSINE_UNIT, GRID
from context_service.domain.pack.retrieval2.informative import factors
from context_service.domain.pack.retrieval2.neighbours import (
    ANSWER_WEIGHT,
    NEIGHBOUR_WEIGHT,
    QUESTION_DISCOUNT,
    asks,
    neighbours_in_order,
)
from context_service.projections.passage_features.features import embedded_text

Rows = npt.NDArray[np.int64]
Floats = npt.NDArray[np.float64]
Vectors = npt.NDArray[np.float32]
CHUNK = 8192  # piece entries pooled at once (a block of 8192 x 256 floats, 8 MiB)
TERM_OVERHEAD = 150  # a term's dictionary slot and string, beyond its characters

_local = threading.local()


def stem_words(words: list[str]) -> list[str]:
    """Porter2 stems of ``words`` (this thread's stemmer, with its own cache)."""
    stemmer = getattr(_local, "stemmer", None)
    if stemmer is None:
        stemmer = _local.stemmer = Stemmer.Stemmer("english")
    stems: list[str] = stemmer.stemWords(words)
    return stems


def memoised(stem: Callable[[list[str]], list[str]]) -> Callable[[list[str]], list[str]]:
    """``stem`` with a memo of its own (one collection's load): each distinct word is stemmed
    once, the rest are lookups."""
    known: dict[str, str] = {}

    def stem_known(words: list[str]) -> list[str]:
        new = [w for w in dict.fromkeys(words) if w not in known]
        if new:
            known.update(zip(new, stem(new), strict=True))
        return [known[w] for w in words]

    return stem_known


class PieceModel(Protocol):
    """The embedding model's tokenizer and embedding matrix (``wordllama_model.Embedder``)."""

    def token_ids(self, texts: Sequence[str]) -> list[list[int]]: ...

    @property
    def rows(self) -> npt.NDArray[np.float32]: ...


class ModelPieces:
    """``PieceModel`` of the process's model, loaded on first use."""

    def __init__(self, embedder: Any = None) -> None:
        self._embedder = embedder

    @property
    def embedder(self) -> Any:
        if self._embedder is None:
            from context_service.adapters.embedding.wordllama_model import load

            self._embedder = load()
        return self._embedder

    def token_ids(self, texts: Sequence[str]) -> list[list[int]]:
        ids: list[list[int]] = self.embedder.token_ids(texts)
        return ids

    @property
    def rows(self) -> npt.NDArray[np.float32]:
        matrix: npt.NDArray[np.float32] = self.embedder.matrix
        return matrix


class QueryPieces:
    """A query's distinct pieces, their counts (float64) and their rows of the model's matrix
    (float64): what pooling the query needs that no collection changes."""

    __slots__ = ("counts", "pieces", "rows", "width")

    def __init__(self, ids: Sequence[int], matrix: npt.NDArray[np.float32]) -> None:
        self.width = matrix.shape[1]
        pieces, counts = piece_counts.distinct(ids)
        self.pieces = pieces
        self.counts: Floats = counts.astype(np.float64)
        self.rows: Floats = matrix[pieces].astype(np.float64)


class HybridFeatures:
    """One collection's features for pack-engine/2 (immutable once built)."""

    def __init__(self, corpus: CollectionCorpus, model: PieceModel,
                 pieces: Sequence[bytes | None] | None = None) -> None:
        """``pieces``: each passage's stored pieces (``piece_counts``), where the loader read
        them; the rest are tokenized here."""
        passages = corpus.passages
        n = len(passages)
        self.collection = corpus.collection
        self.record_ids = [p.record.id for p in passages]
        terms: dict[str, int] = {}
        flat_terms: list[int] = []
        flat_tf: list[int] = []
        flat_counts: list[int] = []
        sizes: list[int] = []
        stem = memoised(stem_words)
        for p in passages:
            r = p.record
            weights, bag = record_analysis(r.title, r.keywords, r.text, stem)
            flat_terms.extend(terms.setdefault(t, len(terms)) for t in weights)
            flat_tf.extend(weights.values())
            flat_counts.extend(bag[t] for t in weights)  # same terms, same order
            sizes.append(len(weights))
        self.terms = terms
        self.term_names = list(terms)
        bag_terms = np.array(flat_terms, dtype=np.int32)
        tf = np.array(flat_tf, dtype=np.float64)
        row_of = np.repeat(np.arange(n, dtype=np.int32), np.array(sizes, dtype=np.int64))
        self.bag_terms = bag_terms
        self.bag_counts = np.array(flat_counts, dtype=np.int32)
        self.bag_starts: Rows = np.r_[0, np.cumsum(np.array(sizes, dtype=np.int64))]
        lengths = np.zeros(n, dtype=np.float64)
        np.add.at(lengths, row_of, tf)
        self.lengths: Floats = lengths
        self.total_length = float(lengths.sum())
        order = np.argsort(bag_terms, kind="stable")  # by term, rows ascending within a term
        self.posting_rows = row_of[order]
        self.posting_tf: Floats = tf[order]
        # rule 2's parts of each posting that do not depend on the request: its record's
        # length, tf (k1 + 1) and tf + k1 (1 - b); a request adds k1 b dl / avgdl
        self.posting_dl: Floats = lengths[self.posting_rows]
        self.posting_numerator: Floats = self.posting_tf * (K1 + 1)
        self.posting_base: Floats = self.posting_tf + K1 * (1 - B)
        self.posting_starts: Rows = np.searchsorted(bag_terms[order],
                                                    np.arange(len(terms) + 1))
        documents = {d: i for i, d in enumerate(dict.fromkeys(
            corpus.document_of[rid] for rid in self.record_ids))}
        numbers = [documents[corpus.document_of[rid]] for rid in self.record_ids]
        previous, following = neighbours_in_order(numbers, [bool(p.record.file)
                                                            for p in passages])
        self.documents = np.array(numbers, dtype=np.int64)
        self.n_documents = len(documents)
        self.previous = np.array(previous, dtype=np.int64)
        self.following = np.array(following, dtype=np.int64)
        self.asks = np.array([asks(p.record.text) for p in passages], dtype=np.bool_)
        # rule 4's request-free parts: each record's own-score multiplier, the weight its
        # previous record lends with, and the rows two places before and after (-1: none)
        self.own_weight: Floats = np.where(self.asks, 1 - QUESTION_DISCOUNT, 1.0)
        self.back_weight: Floats = np.where(np.append(self.asks, False)[self.previous],
                                            ANSWER_WEIGHT, NEIGHBOUR_WEIGHT)
        self.before2: Rows = np.append(self.previous, -1)[self.previous]
        self.after2: Rows = np.append(self.following, -1)[self.following]
        self._pool(corpus, model, pieces)
        self.factor: Floats = np.array(factors(self._information(row_of), numbers,
                                               self.related.tolist()), dtype=np.float64)

    def _information(self, row_of: npt.NDArray[np.int32]) -> list[float]:
        """Rule 4b's information of each record (``informative.information``): the terms' IDF
        by the domain's function, summed per record in bag order (``bincount`` adds its
        weights in input order, as the reference's loop does)."""
        n = len(self.record_ids)
        held = np.bincount(self.bag_terms, minlength=len(self.term_names)).tolist()
        weights = np.array([idf(n, h) for h in held], dtype=np.float64)
        info: list[float] = np.bincount(row_of, weights=weights[self.bag_terms],
                                        minlength=n).tolist()
        return info

    def __len__(self) -> int:
        return len(self.record_ids)

    def spans(self, terms: Sequence[str]) -> tuple[Rows, Rows]:
        """Where each term's postings start and end in the ``posting_*`` arrays (both 0 for a
        term the collection does not hold)."""
        numbers = np.array([self.terms.get(t, -1) for t in terms], dtype=np.int64)
        held = numbers >= 0
        at = np.where(held, numbers, 0)  # a term not held reads slot 0 (then zeroed)
        lo: Rows = np.where(held, self.posting_starts[at], 0)
        # a collection without terms has one slot: a term not held must not read past it
        hi: Rows = np.where(held, self.posting_starts[np.where(held, at + 1, 0)], 0)
        return lo, hi

    def posting(self, term: str) -> tuple[npt.NDArray[np.int32], Floats] | None:
        number = self.terms.get(term)
        if number is None:
            return None
        lo, hi = int(self.posting_starts[number]), int(self.posting_starts[number + 1])
        return self.posting_rows[lo:hi], self.posting_tf[lo:hi]

    def bag(self, row: int) -> dict[str, int]:
        lo, hi = int(self.bag_starts[row]), int(self.bag_starts[row + 1])
        names = self.term_names
        return {names[t]: c for t, c in zip(self.bag_terms[lo:hi].tolist(),
                                            self.bag_counts[lo:hi].tolist(), strict=True)}

    def _pool(self, corpus: CollectionCorpus, model: PieceModel,
              stored: Sequence[bytes | None] | None) -> None:
        """Rule 6 over the collection: IDF-weighted pooling, centring, unit length, grid."""
        n = len(self.record_ids)
        matrix = model.rows
        sizes, entry_pieces, counts = record_pieces(corpus, model, stored)
        vocabulary = matrix.shape[0]
        df = np.bincount(entry_pieces, minlength=vocabulary).astype(np.float64)
        self.piece_idf: Floats = np.log(1 + (n - df + 0.5) / (df + 0.5))
        # float32 (the rows are float16 values): the pooled vector is rounded to the grid later
        weights = (counts * self.piece_idf[entry_pieces]).astype(np.float32)
        pooled = pooled_rows(sizes, entry_pieces, weights, matrix)
        pooled = unit_rows(pooled)
        self.mean: Floats = pooled.mean(axis=0) if n else np.zeros(matrix.shape[1])
        alone = on_grid(unit_rows(pooled - self.mean))
        self.related = related_documents(alone, self.following, self.documents,
                                         self.n_documents)
        self.vectors: Vectors = with_context(alone, self.previous, self.following,
                                             self.documents, self.related)

    def query_vector(self, ids: Sequence[int], matrix: npt.NDArray[np.float32]) -> Vectors:
        """The query's vector for this collection (rule 6), on the grid; zero when it has none."""
        return self.pooled_query(QueryPieces(ids, matrix))

    def pooled_query(self, query: QueryPieces) -> Vectors:
        """``query_vector`` from the query's pieces, read once per request for every
        collection (only the weights and the mean are the collection's)."""
        if not len(query.pieces):
            return np.zeros(query.width, dtype=np.float32)
        weights = query.counts * self.piece_idf[query.pieces]
        pooled = (weights[:, None] * query.rows).sum(axis=0)
        vector: Vectors = on_grid(unit_rows(unit_rows(pooled[None, :]) - self.mean))[0]
        return vector

    def nbytes(self) -> int:
        arrays = sum(a.nbytes for a in (
            self.bag_terms, self.bag_counts, self.bag_starts, self.lengths, self.posting_rows,
            self.posting_tf, self.posting_dl, self.posting_numerator, self.posting_base,
            self.posting_starts, self.documents, self.previous,
            self.following, self.asks, self.own_weight, self.back_weight, self.before2, self.after2,
            self.factor, self.related, self.piece_idf, self.mean,
            self.vectors))
        words = sum(map(sys.getsizeof, self.terms)) + TERM_OVERHEAD * len(self.terms)
        return arrays + words + 8 * len(self.term_names)


def record_pieces(corpus: CollectionCorpus, model: PieceModel,
                  stored: Sequence[bytes | None] | None) -> tuple[Rows, Rows, Rows]:
    """Each passage's number of distinct pieces, then every passage's pieces (ascending) and
    their counts, in passage order: decoded where stored, else from the model's tokenizer."""
    passages = corpus.passages
    found = list(stored) if stored is not None else [None] * len(passages)
    missing = [i for i, b in enumerate(found) if not b]  # none stored, or stored empty
    ids = iter(model.token_ids([embedded_text(passages[i].record) for i in missing])
               if missing else [])
    parts = [piece_counts.decode(b) if b
             else piece_counts.distinct(next(ids))
             for b in found]
    sizes = np.array([len(p) for p, _ in parts], dtype=np.int64)
    if not parts:
        return sizes, np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    return (sizes, np.concatenate([p for p, _ in parts]).astype(np.int64),
            np.concatenate([c for _, c in parts]).astype(np.int64))


def pooled_rows(sizes: Rows, pieces: Rows, weights: Vectors,
                matrix: npt.NDArray[np.float32]) -> Floats:
    """Each row's sum of its pieces' rows of ``matrix`` times their weights, added in float64
    in piece order (a float32 weight times a float16 value is exact in float64, so the sum is
    fixed by that order alone): the j-th pieces of every row that has one at a time, the rows
    held longest first, so the rows still adding are a prefix."""
    n, width = len(sizes), matrix.shape[1]
    if not len(pieces):
        return np.zeros((n, width), dtype=np.float64)
    order = np.argsort(-sizes, kind="stable")
    by_length, from_entry = sizes[order], np.r_[0, np.cumsum(sizes)[:-1]][order]
    wide = weights.astype(np.float64)
    sums = np.zeros((n, width), dtype=np.float64)
    products = np.empty((n, width), dtype=np.float64)
    active = int(np.count_nonzero(by_length))
    for j in range(int(by_length[0])):
        while by_length[active - 1] <= j:
            active -= 1
        at = from_entry[:active] + j
        np.multiply(matrix[pieces[at]], wide[at, None], out=products[:active])
        sums[:active] += products[:active]
    pooled = np.empty_like(sums)
    pooled[order] = sums
    return pooled


def related_documents(vectors: Vectors, following: Rows, documents: Rows,
                      n_documents: int) -> npt.NDArray[np.bool_]:
    """Which documents' neighbouring records are related (``context.related``), from the
    collection's grid vectors. Every sum below is exact: grid products are multiples of 2^-20,
    a cosine's partial sums stay below 2 (float32), and the collection's sums stay far below
    2^53 steps (float64)."""
    n = len(vectors)
    coherent = np.zeros(n_documents, dtype=np.bool_)
    rows = np.flatnonzero(following >= 0)
    if n < 2 or len(rows) < 2:
        return coherent
    steps = 1 / COSINE_UNIT
    total = np.rint(vectors.sum(axis=0, dtype=np.float64) / GRID).astype(np.int64)
    squares = np.einsum("ij,ij->i", vectors, vectors).sum(dtype=np.float64) * steps
    baseline = pair_mean(total.tolist(), int(squares), n)
    adjacent = np.zeros(len(rows), dtype=np.int64)
    for lo in range(0, len(rows), CHUNK):
        at = rows[lo:lo + CHUNK]
        dots = np.einsum("ij,ij->i", vectors[at], vectors[following[at]])
        adjacent[lo:lo + CHUNK] = np.rint(dots.astype(np.float64) * steps).astype(np.int64)
    of = documents[rows]
    pairs = np.bincount(of, minlength=n_documents)
    sums = np.zeros(n_documents, dtype=np.int64)
    np.add.at(sums, of, adjacent)
    sums_of_squares = np.zeros(n_documents, dtype=np.int64)
    np.add.at(sums_of_squares, of, adjacent * adjacent)
    for d in np.flatnonzero(pairs >= MIN_PAIRS).tolist():
        coherent[d] = related(int(pairs[d]), int(sums[d]), int(sums_of_squares[d]), baseline)
    return coherent


def with_context(vectors: Vectors, previous: Rows, following: Rows, documents: Rows,
                 coherent: npt.NDArray[np.bool_]) -> Vectors:
    """Rule 6b over a collection's grid vectors: the rows of related documents (``coherent``,
    by document number) take in their neighbours' vectors."""
    chosen = np.flatnonzero(coherent[documents]) if len(documents) else documents
    if not len(chosen):
        return vectors
    out = vectors.copy()
    for lo in range(0, len(chosen), CHUNK):
        at = chosen[lo:lo + CHUNK]
        before, after = previous[at], following[at]
        has_before = (before >= 0).astype(np.float64)[:, None]
        has_after = (after >= 0).astype(np.float64)[:, None]
        around = (vectors[np.maximum(before, 0)] * has_before
                  + vectors[np.maximum(after, 0)] * has_after) / (has_before + has_after)
        out[at] = on_grid(unit_rows(vectors[at].astype(np.float64) + CONTEXT_WEIGHT * around))
    return out


def unit_rows(x: Floats) -> Floats:
    norms = np.sqrt((x * x).sum(axis=1, keepdims=True))
    norms[norms == 0] = 1.0
    out: Floats = x / norms
    return out


def on_grid(x: Floats) -> Vectors:
    """Components rounded to multiples of ``GRID`` (exact in float32)."""
    grid: Vectors = (np.round(x / GRID) * GRID).astype(np.float32)
    return grid

"""The exact vector list of agent-context-api 7.5: ``1 - (a <=> b)`` over ``vector(256)``,
best first, at most 200 records with a rounded cosine of at least 0.25.

A scan fetches rows best first together with a bound: every row it did not fetch has a cosine
below the bound. When every index asked for has its matrix held in-process (``vector_matrix``),
the candidates are the best rows by the matrices' cosines and the bound is the best left out's
plus ``MATRIX_BOUND``; their exact cosines are computed in-process by pgvector's own arithmetic
when the server agrees with that model (``MatrixScan``, ``exact_cosine``), else asked of
pgvector on ``agent_passages`` (for current indexes). Otherwise the current indexes are read
through ``agent_vectors`` (half precision, half the bytes): candidates by halfvec cosine, and
the bound is the last candidate's plus ``HALF_BOUND``, exact cosines on ``agent_passages``.
Other paths (a document filter; an index no longer current, joined through
``passage_features`` by text hash) fetch exact cosines directly, and the bound is the last one
fetched. A list is complete once no bound reaches the 200th rounded score (or 0.25 while fewer
qualify); until then the scans short of it fetch four times as many. The list is therefore the
one the spec's full exact scan gives."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Executor, Future
from typing import Any, NamedTuple

import numpy as np

from context_service.adapters.pack.exact_cosine import distances
from context_service.adapters.pack.vector_matrix import MATRIX_BOUND, Matrix, VectorMatrices
from context_service.domain.bounded import BoundedCache, Gauge, MiB
from context_service.domain.pack.model import CollectionCorpus, Corpus
from context_service.domain.score import SCALE, to_micros
from context_service.projections.passage_features.features import embedded_text, text_hash

MIN_COSINE_MICROS = 250_000
LIST_LIMIT = 200
# |halfvec cosine - vector cosine| for unit vectors of 256 dimensions: rounding each component
# to half precision moves a vector by at most 2^-11 of its length (plus 2^-25 per subnormal
# component), which turns it by at most ~4.9e-4 radians, so each of the two vectors moves the
# cosine by at most that; float32 sums add ~1.5e-5 to each computation. 2e-3 is twice the sum.
HALF_BOUND = 2e-3
FIRST_ROWS = 300  # rows a scan fetches first; enough for every measured query
NONE_LEFT = float("-inf")
SPREAD_ROWS = 20_000  # rows from which a scan spreads its products over two threads
LAYOUTS_KEPT = 8  # sets of matrices whose ``Layout`` is kept
LAYOUTS_LIMIT_BYTES = 64 * MiB  # and their bound: 16 bytes a row

Row = tuple[float, str, str]  # exact cosine, collection, record id
Held = tuple[Matrix, int]  # a matrix and one of its rows


class Fetched(NamedTuple):
    rows: list[Row]
    bound: float  # every row not fetched has a cosine below it (NONE_LEFT: none left)


def short(parts: Sequence[Fetched]) -> list[int]:
    """The parts a row left unfetched could still make the list from: those whose bound is not
    below the list's cut by more than rounding to millionths can bridge. Fetching more only
    raises the cut, so a part once past it stays past it."""
    micros = sorted((m for part in parts for raw, _, _ in part.rows
                     if (m := to_micros(raw)) >= MIN_COSINE_MICROS), reverse=True)
    cut = micros[LIST_LIMIT - 1] if len(micros) >= LIST_LIMIT else MIN_COSINE_MICROS
    return [i for i, part in enumerate(parts) if part.bound >= cut / SCALE - 1e-6]


class VectorScan:
    """One scan of part of a corpus, in the transaction of ``cur`` (repeatable read)."""

    def __init__(self, cur: Any, task: Sequence[float], corpus: Corpus,
                 eligible: frozenset[str] | None,
                 matrices: VectorMatrices | None = None, spread: Executor | None = None) -> None:
        self.cur = cur
        self.spread = spread
        self.vector = np.asarray(task, dtype=np.float32)
        self.task = "[" + ",".join(repr(float(x)) for x in self.vector.tolist()) + "]"
        self.eligible = eligible
        ours = {c.publication for c in corpus.values()}
        cur.execute("SELECT publication FROM agent_collections"
                    " WHERE publication BETWEEN %s AND %s", (min(ours), max(ours)))
        stored = {r["publication"] for r in cur.fetchall()}
        self.current = sorted(ours & stored)
        self.others = sorted(stored - ours)  # current indexes of other collections in range
        self.older = [c for c in corpus.values() if c.publication not in stored]
        held = [matrices.get(p) for p in self.current] if matrices and not self.older else []
        self.matrices = [m for m in held if m is not None] if all(held) else []
        self._candidates: Candidates | None = None

    def fetch(self, limit: int) -> Fetched:
        """The best ``limit`` candidates' exact cosines (or all of them) and the bound."""
        if self.matrices:
            return self._from_matrices(limit)
        if self.current and not self.older and self.eligible is None:
            return self._prefiltered(limit)
        return self._exact(limit)

    def first_rows(self) -> int:
        """How many rows to fetch first: ``FIRST_ROWS``, or fewer when the matrices show the
        list needs fewer."""
        if not self.matrices:
            return FIRST_ROWS
        return min(FIRST_ROWS, self._scored().enough())

    def _scored(self) -> Candidates:
        if self._candidates is None:
            self._candidates = Candidates(self.matrices, self.vector, self.eligible,
                                          self.spread)
        return self._candidates

    def _from_matrices(self, limit: int) -> Fetched:
        return self._scored().fetched(limit, self._asked)

    def _asked(self, held: list[Held]) -> list[float]:
        """The server's distances of the held rows (only the distances come back: the rows'
        ids are the matrices')."""
        self.cur.execute(
            "SELECT p.embedding <=> %(task)s::vector AS distance"
            " FROM unnest(%(publications)s::int8[], %(ords)s::int4[]) WITH ORDINALITY"
            " AS k(publication, ord, i) JOIN agent_passages p USING (publication, ord)"
            " ORDER BY k.i",
            {"task": self.task, "publications": [m.publication for m, _ in held],
             "ords": [int(m.ords[row]) for m, row in held]})
        found = [float(r["distance"]) for r in self.cur.fetchall()]
        assert len(found) == len(held), "a current index lost rows in a snapshot"
        return found

    def _rescored(self, publications: list[int], ords: list[int]) -> list[Row]:
        """The exact cosines of the candidates ``(publication, ord)``."""
        self.cur.execute(
            "SELECT p.collection, p.record_id, p.embedding <=> %(task)s::vector AS distance"
            " FROM unnest(%(publications)s::int8[], %(ords)s::int4[]) AS k(publication, ord)"
            " JOIN agent_passages p USING (publication, ord)",
            {"task": self.task, "publications": publications, "ords": ords})
        return _rows(self.cur.fetchall())

    def _publications(self, params: dict[str, Any]) -> str:
        """The condition on ``publication`` selecting exactly the current indexes asked for:
        a range, with a list only when other current indexes fall inside it."""
        params.update(lo=self.current[0], hi=self.current[-1], others=self.others,
                      current=self.current)
        where = "publication BETWEEN %(lo)s AND %(hi)s"
        if self.others:
            where += (" AND publication <> ALL(%(others)s)"
                      if len(self.others) < len(self.current)
                      else " AND publication = ANY(%(current)s)")
        return where

    def _prefiltered(self, limit: int) -> Fetched:
        params: dict[str, Any] = {"task": self.task, "limit": limit}
        self.cur.execute("SELECT publication, ord, embedding <=> %(task)s::halfvec(256)"
                         " AS distance FROM agent_vectors WHERE " + self._publications(params)
                         + " ORDER BY distance LIMIT %(limit)s", params)
        found = self.cur.fetchall()
        if not found:
            return Fetched([], NONE_LEFT)
        rows = self._rescored([r["publication"] for r in found], [r["ord"] for r in found])
        last = 1.0 - float(found[-1]["distance"])
        return Fetched(rows, last + HALF_BOUND if len(found) == limit else NONE_LEFT)

    def _exact(self, limit: int) -> Fetched:
        parts: list[str] = []
        params: dict[str, Any] = {"task": self.task}
        if self.current:
            where = ""
            if self.eligible is not None:
                where = " AND document_id = ANY(%(documents)s)"
                params["documents"] = [d.encode("utf-8", "surrogatepass")
                                       for d in self.eligible]
            parts.append("SELECT collection, record_id, embedding <=> %(task)s::vector"
                         " AS distance FROM agent_passages WHERE "
                         + self._publications(params) + f" AND embedding IS NOT NULL{where}")
        if self.older:
            names, ids, hashes = _older_rows(self.older, self.eligible)
            params.update(names=names, ids=ids, hashes=hashes)
            parts.append("SELECT h.collection, h.record_id, f.embedding <=> %(task)s::vector"
                         " AS distance FROM unnest(%(names)s::text[], %(ids)s::bytea[],"
                         " %(hashes)s::bytea[]) AS h(collection, record_id, hash)"
                         " JOIN passage_features f ON f.hash = h.hash"
                         " WHERE f.embedding IS NOT NULL")
        params["limit"] = limit
        self.cur.execute("SELECT * FROM (" + " UNION ALL ".join(parts) + ") s"
                         " ORDER BY s.distance LIMIT %(limit)s", params)
        rows = _rows(self.cur.fetchall())
        return Fetched(rows, rows[-1][0] if len(rows) == limit else NONE_LEFT)


class MatrixScan:
    """A scan without the database, when every index asked for has its matrix held and the
    server agrees with ``exact_cosine``: candidates from the matrices' cosines, their exact
    cosines by pgvector's own arithmetic on the same stored vectors. A matrix holds the
    vectors of one publication, which never change, so its list is the spec's whether or not
    the index is still current."""

    def __init__(self, task: Sequence[float], matrices: Sequence[Matrix],
                 eligible: frozenset[str] | None, spread: Executor | None = None) -> None:
        self.vector = np.asarray(task, dtype=np.float32)
        self.candidates = Candidates(matrices, self.vector, eligible, spread)

    def first_rows(self) -> int:
        return min(FIRST_ROWS, self.candidates.enough())

    def fetch(self, limit: int) -> Fetched:
        return self.candidates.fetched(limit, self._computed)

    def _computed(self, held: list[Held]) -> list[float]:
        """pgvector's distances of the held rows, computed here."""
        found: list[float] = distances(
            np.stack([m.rows[row] for m, row in held]),
            np.array([m.squares[row] for m, row in held], dtype=np.float32),
            self.vector).tolist()
        return found


class Candidates:
    """The cosines of every eligible row of the matrices, computed once (with ``spread``, half
    of the products on one of its threads while the caller computes the other half); ``best``
    takes the best ``limit`` of them.

    Each matrix's product is written into one buffer of every row's dot product, and the
    cosines are then computed over that buffer at once with the matrices' ``Layout``: a few
    numpy calls a scan instead of several a matrix."""

    def __init__(self, matrices: Sequence[Matrix], task: np.ndarray[Any, Any],
                 eligible: frozenset[str] | None, spread: Executor | None = None) -> None:
        norm = float(np.sqrt(np.dot(task.astype(np.float64), task.astype(np.float64))))
        self.matrices = matrices
        layout = Layout.of(matrices)
        dots = np.empty(layout.size, dtype=np.float32)
        cut = len(matrices)
        later: Future[None] | None = None
        if spread is not None and layout.size >= SPREAD_ROWS:
            cut = len(matrices) // 2
            try:
                later = spread.submit(_products, matrices, layout, cut, len(matrices), task,
                                      dots)
            except RuntimeError:  # shut down: this thread computes every product
                cut = len(matrices)
        _products(matrices, layout, 0, cut, task, dots)
        if later is not None:
            later.result()
        cosines = dots.astype(np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            cosines /= layout.norms * norm
        cosines[~np.isfinite(cosines)] = -np.inf  # a row of norm 0 (pgvector: NaN, last)
        if eligible is None:
            self.cosines, self.owners, self.rows = cosines, layout.owners, layout.rows
        else:
            chosen = np.concatenate([m.eligible(eligible) + start for m, start
                                     in zip(matrices, layout.starts, strict=False)])
            self.cosines = cosines[chosen]
            self.owners, self.rows = layout.owners[chosen], layout.rows[chosen]
        self._head: np.ndarray[Any, np.dtype[np.intp]] | None = None

    def head(self) -> np.ndarray[Any, np.dtype[np.intp]]:
        """The best ``max(FIRST_ROWS, LIST_LIMIT) + 1`` rows (or all), best first: one
        partition of every cosine serves the first fetch and its bound."""
        if self._head is None:
            n = len(self.cosines)
            size = min(n, max(FIRST_ROWS, LIST_LIMIT) + 1)
            top = (np.arange(n) if size == n
                   else np.argpartition(self.cosines, n - size)[n - size:])
            self._head = top[np.argsort(-self.cosines[top], kind="stable")]
        return self._head

    def enough(self) -> int:
        """How many of the best rows the list needs, at most: every row whose cosine is within
        two bounds (and rounding) of the 200th best's, or of 0.25 when that is higher."""
        n = len(self.cosines)
        if n <= LIST_LIMIT:
            return n
        head = self.head()
        best_200th = float(self.cosines[head[LIST_LIMIT - 1]])
        floor = max(best_200th - MATRIX_BOUND, MIN_COSINE_MICROS / SCALE) - 5e-7
        threshold = floor - MATRIX_BOUND - 2e-6
        counted = int(np.count_nonzero(self.cosines[head] >= threshold))
        if counted == len(head):  # the rows past the head may qualify too
            counted = int(np.count_nonzero(self.cosines >= threshold))
        return max(1, counted)

    def best(self, limit: int) -> tuple[list[tuple[int, int]], float | None]:
        """The best ``limit`` rows as (matrix index, row), and the highest cosine among the
        rows left out, or None when none are."""
        n = len(self.cosines)
        if limit >= n:
            chosen = np.arange(n)
            left_out = None
        elif limit < len(head := self.head()):
            chosen = head[:limit]
            left_out = float(self.cosines[head[limit]])
        else:
            order = np.argpartition(-self.cosines, limit)
            chosen = order[:limit]
            left_out = float(self.cosines[order[limit]])
        return (list(zip(self.owners[chosen].tolist(), self.rows[chosen].tolist(),
                         strict=True)), left_out)

    def fetched(self, limit: int, exact: Callable[[list[Held]], list[float]]) -> Fetched:
        """The best ``limit`` rows with the distances ``exact`` gives them (pgvector's), and
        the bound of the rows left out."""
        best, left_out = self.best(limit)
        if not best:
            return Fetched([], NONE_LEFT)
        held = [(self.matrices[m], row) for m, row in best]
        rows = [(1.0 - d, m.collection, m.record_ids[row])
                for d, (m, row) in zip(exact(held), held, strict=True)]
        return Fetched(rows, NONE_LEFT if left_out is None else left_out + MATRIX_BOUND)


class Layout:
    """Where each matrix's rows lie in one vector of every row of several matrices: the
    matrices' norms end to end, each row's matrix index and row, each matrix's first index.
    Kept for the few sets of publications scanned lately: a publication's vectors never change,
    so neither does its part of a layout, and a layout holds no matrix (an evicted one is
    freed); the layouts of a publication no longer current are dropped with its matrix."""

    _kept: BoundedCache[tuple[tuple[int, int], ...], Layout] = BoundedCache(
        "pack_layouts", LAYOUTS_LIMIT_BYTES, lambda _, layout: layout.nbytes(),
        max_entries=LAYOUTS_KEPT)

    def __init__(self, matrices: Sequence[Matrix]) -> None:
        sizes = [len(m) for m in matrices]
        self.size = sum(sizes)
        self.starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.intp).tolist()
        self.norms = (np.concatenate([m.norms for m in matrices]) if matrices
                      else np.empty(0, dtype=np.float64))
        self.owners = np.repeat(np.arange(len(matrices), dtype=np.int32), sizes)
        self.rows = (np.concatenate([np.arange(n, dtype=np.int32) for n in sizes]) if matrices
                     else np.empty(0, dtype=np.int32))

    def nbytes(self) -> int:
        return self.norms.nbytes + self.owners.nbytes + self.rows.nbytes + 8 * len(self.starts)

    @classmethod
    def of(cls, matrices: Sequence[Matrix]) -> Layout:
        key = tuple((m.publication, len(m)) for m in matrices)
        found = cls._kept.get(key)
        if found is not None:
            return found
        return cls._kept.keep(key, cls(matrices))

    @classmethod
    def retain(cls, publications: Iterable[int]) -> int:
        """Drop the layouts of any publication not among ``publications``."""
        keep = set(publications)
        return cls._kept.retain(lambda key, _: all(p in keep for p, _ in key))

    @classmethod
    def gauges(cls) -> list[Gauge]:
        return cls._kept.gauges()


def _products(matrices: Sequence[Matrix], layout: Layout, lo: int, hi: int,
              task: np.ndarray[Any, Any], dots: np.ndarray[Any, Any]) -> None:
    """The dot products of ``matrices[lo:hi]``'s rows with ``task``, into their places in
    ``dots`` (one BLAS call a matrix, the interpreter's lock released in each)."""
    for i in range(lo, hi):
        start = layout.starts[i]
        np.matmul(matrices[i].rows, task, out=dots[start:start + len(matrices[i])])


def _rows(found: Iterable[Any]) -> list[Row]:
    return [(1.0 - float(r["distance"]), r["collection"],
             bytes(r["record_id"]).decode("utf-8", "surrogatepass")) for r in found]


def _older_rows(corpora: Iterable[CollectionCorpus], eligible: frozenset[str] | None,
                ) -> tuple[list[str], list[bytes], list[bytes]]:
    names, ids, hashes = [], [], []
    for corpus in corpora:
        for passage in corpus.passages:
            if eligible is not None and corpus.document_of[passage.record.id] not in eligible:
                continue
            names.append(corpus.collection)
            ids.append(passage.record.id.encode("utf-8", "surrogatepass"))
            hashes.append(text_hash(embedded_text(passage.record)))
    return names, ids, hashes

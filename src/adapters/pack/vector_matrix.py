"""The current indexes' vectors held in-process, one float32 matrix per publication (read once
from ``agent_passages`` by the corpus warmer). A vector scan takes its candidates from one
matrix-vector product per index instead of PostgreSQL reading every row; the candidates'
exact cosines are pgvector's arithmetic, in-process when the server agrees with the model of
``exact_cosine``, else asked of the server (``vector_scan``)."""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterable
from typing import Any

import numpy as np
from eventsourcing.postgres import PostgresDatastore

from context_service.adapters.pack.exact_cosine import agrees, square_norms
from context_service.domain.bounded import BoundedCache, Gauge, MiB

log = logging.getLogger(__name__)

DIM = 256
# |cosine from the matrix - pgvector's cosine| for vectors of 256 dimensions: a float32 sum of
# n products is off by at most n·2^-24·Σ|a_i·b_i| <= 1.53e-5·|a|·|b| whatever the order of the
# additions. pgvector makes three such sums (a·b, a·a, b·b: at most ~3.1e-5 on the cosine), the
# matrix one (a·b; its norms are float64): at most ~4.6e-5 together. 1e-4 is twice that.
MATRIX_BOUND = 1e-4
LIMIT_BYTES = 512 * MiB  # the matrices' bound: about 400,000 passages at ~1.3 KB each

Floats = np.ndarray[Any, np.dtype[np.float64]]


class Matrix:
    """One index's embedded passages: ``ords`` (their ``ord``), their collection and record
    ids, the vectors as rows, their norms, and each row's document as a code into
    ``documents``."""

    __slots__ = ("codes", "collection", "documents", "norms", "ords", "publication",
                 "record_ids", "rows", "squares")

    def __init__(self, publication: int, collection: str, ords: list[int],
                 record_ids: list[str], documents: list[bytes], vectors: bytes) -> None:
        self.publication = publication
        self.collection = collection
        self.record_ids = record_ids
        self.ords = np.asarray(ords, dtype=np.int32)
        self.rows = np.frombuffer(vectors, dtype=">f4").astype(np.float32).reshape(-1, DIM)
        self.norms = np.sqrt(np.einsum("ij,ij->i", self.rows, self.rows, dtype=np.float64))
        self.squares = square_norms(self.rows)  # pgvector's own a·a of each row
        names, codes = np.unique(np.asarray(documents, dtype=object), return_inverse=True)
        self.documents: list[str] = [bytes(d).decode("utf-8", "surrogatepass") for d in names]
        self.codes = codes.astype(np.int32)

    def __len__(self) -> int:
        return len(self.ords)

    def nbytes(self) -> int:
        """What the matrix holds: its arrays, and its record ids and document names (a list
        slot and the string each)."""
        arrays = sum(a.nbytes for a in (self.rows, self.norms, self.squares, self.ords,
                                        self.codes))
        names = sum(map(sys.getsizeof, self.record_ids)) + sum(map(sys.getsizeof,
                                                                   self.documents))
        return arrays + names + 8 * (len(self.record_ids) + len(self.documents))

    def eligible(self, documents: frozenset[str]) -> np.ndarray[Any, np.dtype[np.intp]]:
        """The rows whose document is one of ``documents``."""
        wanted = [i for i, name in enumerate(self.documents) if name in documents]
        return np.flatnonzero(np.isin(self.codes, np.asarray(wanted, dtype=np.int32)))


def read_matrix(cur: Any, publication: int) -> Matrix:
    cur.execute("SELECT ord, collection, record_id, document_id, embedding FROM agent_passages"
                " WHERE publication = %s AND embedding IS NOT NULL ORDER BY ord",
                (publication,), binary=True)
    ords: list[int] = []
    record_ids: list[str] = []
    documents: list[bytes] = []
    vectors: list[bytes] = []
    collection = ""
    for row in cur.fetchall():
        collection = row["collection"]
        ords.append(row["ord"])
        record_ids.append(bytes(row["record_id"]).decode("utf-8", "surrogatepass"))
        documents.append(bytes(row["document_id"]))
        vectors.append(bytes(row["embedding"])[4:])  # pgvector's binary form: after the header
    return Matrix(publication, collection, ords, record_ids, documents, b"".join(vectors))


class VectorMatrices:
    """The matrices of current indexes, least recently used first out past a bound in bytes
    (``max_rows`` stops the warmer loading more)."""

    def __init__(self, datastore: PostgresDatastore, max_rows: int = 400_000,
                 limit_bytes: int = LIMIT_BYTES) -> None:
        self.datastore = datastore
        self.max_rows = max_rows
        self._cache: BoundedCache[int, Matrix] = BoundedCache(
            "pack_matrices", limit_bytes, lambda _, m: m.nbytes())
        self._oversized: set[int] = set()  # matrices too large to keep: not read again
        # whether the server's ``<=>`` is the in-process model's (``exact_cosine``), asked
        # once, at the first load: then a scan of held matrices needs no database at all
        self.exact: bool | None = None

    def get(self, publication: int) -> Matrix | None:
        return self._cache.get(publication)

    def has_room(self) -> bool:
        return self.held()[1] < self.max_rows and self._cache.bytes < self._cache.limit

    def held(self) -> tuple[int, int]:
        """How many indexes and rows are held."""
        held = self._cache.values()
        return len(held), sum(map(len, held))

    def gauges(self) -> list[Gauge]:
        return self._cache.gauges()

    def load(self, publication: int) -> Matrix | None:
        """Read the matrix of an index if it is current (its rows are written in one
        transaction with its ``agent_collections`` row, so a current index is read whole)."""
        with self.datastore.transaction(commit=False) as cur:
            cur.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            cur.execute("SELECT 1 FROM agent_collections WHERE publication = %s",
                        (publication,))
            if cur.fetchone() is None:
                return None
            matrix = read_matrix(cur, publication)
        if self.exact is None:
            self.exact = self._agrees()
        if matrix.nbytes() > self._cache.limit:  # not kept: its scans run in PostgreSQL
            self._oversized.add(publication)
            return None
        return self._cache.keep(publication, matrix)

    def oversized(self, publication: int) -> bool:
        return publication in self._oversized

    def _agrees(self) -> bool:
        try:
            with self.datastore.transaction(commit=False) as cur:
                found = agrees(cur)
        except Exception:  # the server lacks pgvector's operator, or refused the sample
            log.warning("the exact cosine model could not be checked", exc_info=True)
            return False
        if not found:
            log.warning("the server's cosine distance is not the in-process model's:"
                        " vector scans ask it for every exact cosine")
        return found

    def retain(self, publications: Iterable[int]) -> int:
        """Drop the matrices of indexes no longer current; how many were dropped."""
        keep = set(publications)
        self._oversized &= keep
        return self._cache.retain(lambda publication, _: publication in keep)

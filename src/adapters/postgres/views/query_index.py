"""SQL of the query index: the projection's writes (COPY in bulk) and the search of spec 5.2.

Scoring runs in PostgreSQL over the postings arrays of the candidate contexts only: one index
range per query term, one pass over the arrays (summed per record only when the query has
several terms, in 32-bit arithmetic whenever the stored maximum weight proves it cannot
overflow), a top-N sort on integers (score, context rank, record number), and the page's
documents fetched last. Record-level filters (ids, source contexts) join the records table; type
and revision are properties of a whole index (every record carries its context's type and the
index revision), so they select contexts.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Iterable, Sequence
from typing import Any

import msgspec
from eventsourcing.postgres import PostgresDatastore

from context_service.domain.context.events import QueryRecord
from context_service.domain.query.index import IndexLayout, numbers, weights
from context_service.domain.stream import context_stream
from context_service.projections.query_index.reads import Hit, Search, SearchPage
from context_service.projections.query_index.view import IndexedContext

_enc = msgspec.json.Encoder()
_record = msgspec.json.Decoder(QueryRecord)
_records = msgspec.json.Decoder(tuple[QueryRecord, ...])
_COPY_CHUNK = 1 << 20


class QueryIndexSql:
    """The projection's view, bound to one batch transaction."""

    def __init__(self, cur: Any) -> None:
        self.cur = cur

    def load(self, stream_ids: Iterable[uuid.UUID]) -> dict[uuid.UUID, IndexedContext]:
        self.cur.execute(
            "SELECT stream_id, namespace, name, type, current_revision, index_revision, records,"
            " max_weight, upload_revision, upload_id FROM query_contexts"
            " WHERE stream_id = ANY(%s)", (list(stream_ids),))
        return {r["stream_id"]: IndexedContext(
            r["namespace"], r["name"], r["type"], r["current_revision"], r["index_revision"],
            r["records"], r["max_weight"],
            None if r["upload_id"] is None else (r["upload_revision"], r["upload_id"]))
            for r in self.cur.fetchall()}

    def save(self, stream_id: uuid.UUID, context: IndexedContext) -> None:
        self.cur.execute(
            "INSERT INTO query_contexts (stream_id, namespace, name, type, current_revision,"
            " index_revision, records, max_weight, upload_revision, upload_id)"
            " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"
            " ON CONFLICT (stream_id) DO UPDATE SET namespace = EXCLUDED.namespace,"
            " name = EXCLUDED.name, type = EXCLUDED.type,"
            " current_revision = EXCLUDED.current_revision,"
            " index_revision = EXCLUDED.index_revision, records = EXCLUDED.records,"
            " max_weight = EXCLUDED.max_weight, upload_revision = EXCLUDED.upload_revision,"
            " upload_id = EXCLUDED.upload_id",
            (stream_id, context.namespace, context.name, context.type, context.current_revision,
             context.index_revision, context.records, context.max_weight,
             *(context.upload or (None, None))))

    def remove(self, stream_id: uuid.UUID) -> None:
        self._drop_records(stream_id)
        self.drop_staged(stream_id)
        self.cur.execute("DELETE FROM query_contexts WHERE stream_id = %s", (stream_id,))

    def staged_parts(self, stream_id: uuid.UUID,
                     numbers: Sequence[int]) -> dict[int, tuple[QueryRecord, ...]]:
        self.cur.execute("SELECT part, records FROM query_staged_parts"
                         " WHERE stream_id = %s AND part = ANY(%s)", (stream_id, list(numbers)))
        return {r["part"]: _records.decode(r["records"]) for r in self.cur.fetchall()}

    def stage(self, stream_id: uuid.UUID, part: int, records: tuple[QueryRecord, ...]) -> None:
        self.cur.execute(
            "INSERT INTO query_staged_parts (stream_id, part, records) VALUES (%s, %s, %s)"
            " ON CONFLICT (stream_id, part) DO UPDATE SET records = EXCLUDED.records",
            (stream_id, part, _enc.encode(records)))

    def drop_staged(self, stream_id: uuid.UUID) -> None:
        self.cur.execute("DELETE FROM query_staged_parts WHERE stream_id = %s", (stream_id,))

    def replace_records(self, stream_id: uuid.UUID, index: IndexLayout) -> None:
        self._drop_records(stream_id)
        if not index.records:
            return
        with self.cur.copy("COPY query_records (stream_id, ord, id, source_context, doc)"
                           " FROM STDIN") as copy:
            for number, record in enumerate(index.records):
                copy.write_row((stream_id, number, record.id.encode(),
                                record.source.context.encode(), _enc.encode(record).decode()))
        with self.cur.copy("COPY query_postings (stream_id, term, ords, weights)"
                           " FROM STDIN") as copy:
            for chunk in postings_copy_text(str(stream_id), index):
                copy.write(chunk)

    def _drop_records(self, stream_id: uuid.UUID) -> None:
        self.cur.execute("DELETE FROM query_postings WHERE stream_id = %s", (stream_id,))
        self.cur.execute("DELETE FROM query_records WHERE stream_id = %s", (stream_id,))


def postings_copy_text(stream_id: str, index: IndexLayout) -> Iterable[str]:
    """COPY text lines of the postings. Terms are letters and digits only, and array elements
    integers, so nothing needs escaping (array input allows the blanks of a list's repr)."""
    lines: list[str] = []
    size = 0
    for term, posting in index.postings.items():
        line = (f"{stream_id}\t{term}\t{{{str(numbers(posting))[1:-1]}}}"
                f"\t{{{str(weights(posting))[1:-1]}}}\n")
        lines.append(line)
        size += len(line)
        if size >= _COPY_CHUNK:
            yield "".join(lines)
            lines, size = [], 0
    if lines:
        yield "".join(lines)


# --- reading --------------------------------------------------------------------------------

_STATUS = """
SELECT n.rank, q.type, q.index_revision, q.current_revision, q.max_weight
FROM unnest(%(streams)s::uuid[]) WITH ORDINALITY AS n(stream_id, rank)
LEFT JOIN query_contexts q ON q.stream_id = n.stream_id
ORDER BY n.rank
"""

# Candidate contexts and their rank (position in name order): (score, rank, record number)
# is the spec's order, all integers.
_CANDIDATES = "unnest(%(streams)s::uuid[], %(ranks)s::int4[]) AS c(stream_id, rank)"

_POSTINGS = f"""
SELECT c.rank, t.n, unnest(p.ords) AS ord, unnest(p.weights) AS weight
FROM {_CANDIDATES}
JOIN query_postings p ON p.stream_id = c.stream_id
JOIN unnest(%(terms)s::text[], %(counts)s::int4[]) AS t(term, n) ON p.term = t.term
"""

# One distinct term: a record appears once in its context's postings, so no grouping.
_ONE_TERM = "SELECT x.rank, x.ord, {weight} * x.n AS score FROM (" + _POSTINGS + ") x {where}"
_MANY_TERMS = ("SELECT x.rank, x.ord, sum({weight} * x.n) AS score FROM (" + _POSTINGS
               + ") x {where} GROUP BY x.rank, x.ord")
_NO_TERMS = f"""
SELECT c.rank, f.ord, 1 AS score FROM {_CANDIDATES}
JOIN query_records f ON f.stream_id = c.stream_id WHERE TRUE {{conditions}}
"""
_FILTER = f"""
WHERE (x.rank, x.ord) IN (SELECT c.rank, f.ord FROM {_CANDIDATES}
                          JOIN query_records f ON f.stream_id = c.stream_id
                          WHERE TRUE {{conditions}})
"""

_PAGE = f"""
SELECT m.score, r.doc FROM (
    SELECT * FROM ({{matches}}) m ORDER BY m.score DESC, m.rank, m.ord
    OFFSET %(offset)s LIMIT %(fetch)s
) m
JOIN {_CANDIDATES} ON c.rank = m.rank
JOIN query_records r ON r.stream_id = c.stream_id AND r.ord = m.ord
ORDER BY m.score DESC, m.rank, m.ord
"""

_COUNT = "SELECT count(*) AS total FROM ({matches}) m"
_MAX_OFFSET = 1 << 62
_INT32 = (1 << 31) - 1


def _matches(search: Search, max_weight: int) -> str:
    conditions = []
    # The indexes key the SHA-256 of the values (which may be of any length); the hash finds
    # the rows through them, the exact value decides.
    if search.ids:
        conditions.append("AND sha256(f.id) = ANY(%(id_hashes)s::bytea[])"
                          " AND f.id = ANY(%(ids)s::bytea[])")
    if search.source_contexts:
        conditions.append("AND sha256(f.source_context) = ANY(%(source_hashes)s::bytea[])"
                          " AND f.source_context = ANY(%(sources)s::bytea[])")
    if not search.terms:
        return _NO_TERMS.format(conditions=" ".join(conditions))
    where = _FILTER.format(conditions=" ".join(conditions)) if conditions else ""
    # 32-bit products are markedly faster; use them whenever they cannot overflow.
    largest = max(count for _, count in search.terms) * max_weight
    weight = "x.weight" if largest <= _INT32 else "x.weight::int8"
    shape = _ONE_TERM if len(search.terms) == 1 else _MANY_TERMS
    return shape.format(weight=weight, where=where)


class QueryIndexReadsSql:
    """The read port over the tables above; one snapshot per search."""

    def __init__(self, datastore: PostgresDatastore) -> None:
        self.datastore = datastore

    def search(self, search: Search) -> SearchPage:
        streams = [context_stream(search.namespace, name).id for name in search.contexts]
        with self.datastore.transaction(commit=False) as cur:
            # Hash aggregation over many postings must not spill: the planner cannot estimate
            # how many rows unnest yields.
            cur.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY;"
                        " SET LOCAL work_mem = '64MB'")
            cur.execute(_STATUS, {"streams": streams})
            unavailable, usable = _classify(search, cur.fetchall())
            if not usable:
                return SearchPage((), False, search.offset > 0, unavailable)
            ranks = [rank for rank, _ in usable]
            params = _params(search, [streams[r - 1] for r in ranks], ranks)
            matches = _matches(search, max(weight for _, weight in usable))
            cur.execute(_PAGE.format(matches=matches), params)
            rows = cur.fetchall()
            beyond = False
            if not rows and search.offset > 0:
                cur.execute(_COUNT.format(matches=matches), params)
                counted = cur.fetchone()
                beyond = counted is not None and search.offset > counted["total"]
        hits = tuple(Hit(int(r["score"]), _record.decode(r["doc"])) for r in rows[:search.limit])
        return SearchPage(hits, len(rows) > search.limit, beyond, unavailable)


def _classify(search: Search,
              rows: Sequence[Any]) -> tuple[tuple[str, ...], list[tuple[int, int]]]:
    """Contexts whose index is unusable, and the (rank, max weight) of the usable ones that
    pass the context-level filters (type, revision). The filters are sets, read once: a list
    searched for each context cost the contexts times the list (100,000 types and as many
    revisions, within the body limit, over 1,000 contexts: 1.3 s)."""
    unavailable: list[str] = []
    usable: list[tuple[int, int]] = []
    types, revisions = frozenset(search.types), frozenset(search.revisions)
    for row in rows:
        revision = row["index_revision"]
        if revision is None or revision != row["current_revision"]:
            unavailable.append(search.contexts[row["rank"] - 1])
        elif ((not types or row["type"] in types)
              and (not revisions or revision in revisions)):
            usable.append((row["rank"], row["max_weight"]))
    return tuple(unavailable), usable


def _params(search: Search, streams: list[uuid.UUID], ranks: list[int]) -> dict[str, Any]:
    ids = [value.encode() for value in search.ids]
    sources = [value.encode() for value in search.source_contexts]
    return {
        "streams": streams,
        "ranks": ranks,
        "terms": [term for term, _ in search.terms],
        "counts": [count for _, count in search.terms],
        "ids": ids,
        "id_hashes": [hashlib.sha256(value).digest() for value in ids],
        "sources": sources,
        "source_hashes": [hashlib.sha256(value).digest() for value in sources],
        "offset": min(search.offset, _MAX_OFFSET),
        "fetch": search.limit + 1,
    }

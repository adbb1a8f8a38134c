"""SQL of the query index: the projection's writes (COPY in bulk) and the search of spec 5.2.

Scoring runs in PostgreSQL over the postings arrays of the candidate contexts only: one index
probe per (context, term), one pass over the arrays, a top-N sort on integers (score, context
rank, record number), and the page's documents fetched last. Record-level filters (ids, source
contexts) join the records table; type and revision are properties of a whole index (every
record carries its context's type and the index revision), so they select contexts.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from typing import Any

import msgspec
from eventsourcing.postgres import PostgresDatastore

from src.domain.context.events import QueryRecord
from src.domain.query.index import IndexLayout, numbers, weights
from src.domain.stream import context_stream
from src.projections.query_index.reads import Hit, Search, SearchPage
from src.projections.query_index.view import IndexedContext

_enc = msgspec.json.Encoder()
_record = msgspec.json.Decoder(QueryRecord)
_COPY_CHUNK = 1 << 20


class QueryIndexSql:
    """The projection's view, bound to one batch transaction."""

    def __init__(self, cur: Any) -> None:
        self.cur = cur

    def load(self, stream_ids: Iterable[uuid.UUID]) -> dict[uuid.UUID, IndexedContext]:
        self.cur.execute(
            "SELECT stream_id, namespace, name, type, current_revision, index_revision, records"
            " FROM query_contexts WHERE stream_id = ANY(%s)", (list(stream_ids),))
        return {r["stream_id"]: IndexedContext(r["namespace"], r["name"], r["type"],
                                               r["current_revision"], r["index_revision"],
                                               r["records"])
                for r in self.cur.fetchall()}

    def save(self, stream_id: uuid.UUID, context: IndexedContext) -> None:
        self.cur.execute(
            "INSERT INTO query_contexts (stream_id, namespace, name, type, current_revision,"
            " index_revision, records) VALUES (%s, %s, %s, %s, %s, %s, %s)"
            " ON CONFLICT (stream_id) DO UPDATE SET namespace = EXCLUDED.namespace,"
            " name = EXCLUDED.name, type = EXCLUDED.type,"
            " current_revision = EXCLUDED.current_revision,"
            " index_revision = EXCLUDED.index_revision, records = EXCLUDED.records",
            (stream_id, context.namespace, context.name, context.type,
             context.current_revision, context.index_revision, context.records))

    def remove(self, stream_id: uuid.UUID) -> None:
        self._drop_records(stream_id)
        self.cur.execute("DELETE FROM query_contexts WHERE stream_id = %s", (stream_id,))

    def replace_records(self, stream_id: uuid.UUID, index: IndexLayout) -> None:
        self._drop_records(stream_id)
        if not index.records:
            return
        with self.cur.copy("COPY query_records (stream_id, ord, id, source_context, doc)"
                           " FROM STDIN") as copy:
            for number, record in enumerate(index.records):
                copy.write_row((stream_id, number, record.id, record.source.context,
                                _enc.encode(record).decode()))
        with self.cur.copy("COPY query_postings (stream_id, term, ords, weights)"
                           " FROM STDIN") as copy:
            for chunk in postings_copy_text(str(stream_id), index):
                copy.write(chunk)

    def _drop_records(self, stream_id: uuid.UUID) -> None:
        self.cur.execute("DELETE FROM query_postings WHERE stream_id = %s", (stream_id,))
        self.cur.execute("DELETE FROM query_records WHERE stream_id = %s", (stream_id,))


def postings_copy_text(stream_id: str, index: IndexLayout) -> Iterable[str]:
    """COPY text lines of the postings. Terms are letters and digits only, and array elements
    integers, so nothing needs escaping."""
    lines: list[str] = []
    size = 0
    for term, posting in index.postings.items():
        line = (f"{stream_id}\t{term}\t{{{','.join(map(str, numbers(posting)))}}}"
                f"\t{{{','.join(map(str, weights(posting)))}}}\n")
        lines.append(line)
        size += len(line)
        if size >= _COPY_CHUNK:
            yield "".join(lines)
            lines, size = [], 0
    if lines:
        yield "".join(lines)


# --- reading --------------------------------------------------------------------------------

_STATUS = """
SELECT n.rank, q.type, q.index_revision, q.current_revision
FROM unnest(%(streams)s::uuid[]) WITH ORDINALITY AS n(stream_id, rank)
LEFT JOIN query_contexts q ON q.stream_id = n.stream_id
ORDER BY n.rank
"""

_CANDIDATES = "unnest(%(streams)s::uuid[], %(ranks)s::int4[]) AS c(stream_id, rank)"

_SCORED = f"""
SELECT c.rank, p.stream_id, u.ord, sum(u.weight::int8 * t.n) AS score
FROM {_CANDIDATES}
JOIN query_postings p ON p.stream_id = c.stream_id
JOIN unnest(%(terms)s::text[], %(counts)s::int4[]) AS t(term, n) ON p.term = t.term
CROSS JOIN LATERAL unnest(p.ords, p.weights) AS u(ord, weight)
GROUP BY c.rank, p.stream_id, u.ord
"""

_UNSCORED = f"""
SELECT c.rank, r.stream_id, r.ord, 1 AS score
FROM {_CANDIDATES}
JOIN query_records r ON r.stream_id = c.stream_id
"""

_FILTERED = """
SELECT s.* FROM ({inner}) s
WHERE EXISTS (SELECT 1 FROM query_records f WHERE f.stream_id = s.stream_id AND f.ord = s.ord
              {conditions})
"""

_PAGE = """
SELECT s.score, r.doc FROM (
    SELECT * FROM ({matches}) m ORDER BY m.score DESC, m.rank, m.ord
    OFFSET %(offset)s LIMIT %(fetch)s
) s JOIN query_records r ON r.stream_id = s.stream_id AND r.ord = s.ord
ORDER BY s.score DESC, s.rank, s.ord
"""

_COUNT = "SELECT count(*) AS total FROM ({matches}) m"
_MAX_OFFSET = 1 << 62


def _matches(search: Search) -> str:
    inner = _SCORED if search.terms else _UNSCORED
    conditions = []
    if search.ids:
        conditions.append("AND f.id = ANY(%(ids)s::text[])")
    if search.source_contexts:
        conditions.append("AND f.source_context = ANY(%(sources)s::text[])")
    if not conditions:
        return inner
    return _FILTERED.format(inner=inner, conditions=" ".join(conditions))


class QueryIndexReadsSql:
    """The read port over the tables above; one snapshot per search."""

    def __init__(self, datastore: PostgresDatastore) -> None:
        self.datastore = datastore

    def search(self, search: Search) -> SearchPage:
        streams = [context_stream(search.namespace, name).id for name in search.contexts]
        with self.datastore.transaction(commit=False) as cur:
            cur.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            cur.execute(_STATUS, {"streams": streams})
            unavailable, ranks = _classify(search, cur.fetchall())
            if not ranks:
                return SearchPage((), False, search.offset > 0, unavailable)
            params = _params(search, [streams[r - 1] for r in ranks], ranks)
            matches = _matches(search)
            cur.execute(_PAGE.format(matches=matches), params)
            rows = cur.fetchall()
            beyond = False
            if not rows and search.offset > 0:
                cur.execute(_COUNT.format(matches=matches), params)
                counted = cur.fetchone()
                beyond = counted is not None and search.offset > counted["total"]
        hits = tuple(Hit(int(r["score"]), _record.decode(r["doc"])) for r in rows[:search.limit])
        return SearchPage(hits, len(rows) > search.limit, beyond, unavailable)


def _classify(search: Search, rows: Sequence[Any]) -> tuple[tuple[str, ...], list[int]]:
    """Contexts whose index is unusable, and the ranks of the usable ones passing the
    context-level filters (type, revision)."""
    unavailable: list[str] = []
    ranks: list[int] = []
    for row in rows:
        revision = row["index_revision"]
        if revision is None or revision != row["current_revision"]:
            unavailable.append(search.contexts[row["rank"] - 1])
        elif ((not search.types or row["type"] in search.types)
              and (not search.revisions or revision in search.revisions)):
            ranks.append(row["rank"])
    return tuple(unavailable), ranks


def _params(search: Search, streams: list[uuid.UUID], ranks: list[int]) -> dict[str, Any]:
    return {
        "streams": streams,
        "ranks": ranks,
        "terms": [term for term, _ in search.terms],
        "counts": [count for _, count in search.terms],
        "ids": list(search.ids),
        "sources": list(search.source_contexts),
        "offset": min(search.offset, _MAX_OFFSET),
        "fetch": search.limit + 1,
    }

"""studied_fields refreshes the table's statistics in the transaction of a large write, so
the first field plans after a bulk load are estimated from the rows they read (and do not
flip when autovacuum analyzes the table later)."""

from __future__ import annotations

import pytest

from context_service import bootstrap
from context_service.domain.context.events import QueryRecord, RecordField
from context_service.projections.studied_fields.projection import ANALYZE_ROWS
from tests.projections.pack_support import collection, publish

pytestmark = pytest.mark.postgres
REV = "d" * 64


def _records(count: int) -> tuple[QueryRecord, ...]:
    return tuple(QueryRecord(
        id=f"r{i}", context="bulk", type="memory", revision=REV, text=f"record {i}",
        file=f"f{i}.md", fields=(RecordField("score", "number", float(i)),
                                 RecordField("region", "text", f"region {i % 7}")))
        for i in range(count))


def _estimates(container: bootstrap.Container) -> tuple[float, int, bool]:
    """The planner's row count of the table, its real row count, and whether the extended
    statistics of migration 0013 hold a most-common-values list."""
    with container.datastore.transaction(commit=False) as cur:
        cur.execute("SELECT reltuples FROM pg_class WHERE oid = 'agent_data.fields'::regclass")
        reltuples = cur.fetchone()["reltuples"]
        cur.execute("SELECT count(*) AS n FROM agent_data.fields")
        rows = cur.fetchone()["n"]
        cur.execute("SELECT d.stxdmcv IS NOT NULL AS mcv FROM pg_statistic_ext s"
                    " JOIN pg_statistic_ext_data d ON d.stxoid = s.oid"
                    " WHERE s.stxname = 'fields_kind'")
        found = cur.fetchone()
    return float(reltuples), int(rows), bool(found and found["mcv"])


def test_a_large_index_is_analyzed_with_its_write(container: bootstrap.Container) -> None:
    count = ANALYZE_ROWS // 2 + 10  # two fields a record: past the threshold
    collection(container.contexts, "bulk", REV)
    publish(container.contexts, "bulk", REV, _records(count))
    head = container.store.head()
    for runner in container.runners.values():
        assert runner.wait_for(head, timeout=30)
    reltuples, rows, mcv = _estimates(container)
    assert rows >= 2 * count
    assert reltuples == rows  # counted by ANALYZE (a small table is read whole)
    assert mcv

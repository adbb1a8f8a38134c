"""Every projection table of a container as comparable rows (how views are compared with a
rebuild from position zero)."""

from __future__ import annotations

from typing import Any

from context_service.bootstrap import Container


def snapshot(container: Container) -> dict[str, list[Any]]:
    tables: dict[str, list[Any]] = {}
    with container.datastore.transaction(commit=False) as cur:
        for runner in container.runners.values():
            for table in [t for p, _ in runner.projections for t in p.tables]:
                cur.execute(f"SELECT * FROM {table}")
                rows = [tuple(sorted((k, str(v)) for k, v in r.items())) for r in cur.fetchall()]
                tables[table] = sorted(rows)
    return tables


def differences(live: dict[str, list[Any]], rebuilt: dict[str, list[Any]]) -> dict[str, Any]:
    """Per table, the rows only one side has (empty when the views are equal)."""
    out: dict[str, Any] = {}
    for table in sorted(set(live) | set(rebuilt)):
        a, b = set(live.get(table, [])), set(rebuilt.get(table, []))
        if a != b:
            out[table] = {"live only": sorted(a - b)[:5], "rebuild only": sorted(b - a)[:5]}
    return out

"""Plan inspection of the registration check (spec 11.2 check 9): every scanned relation is a
base table behind the agent views, every function scan calls an allowed set-returning function."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

BASE_SCHEMA = "agent_data"
ALLOWED_FUNCTIONS = frozenset({
    "unnest", "generate_series", "jsonb_array_elements", "jsonb_array_elements_text",
    "jsonb_each", "jsonb_each_text", "regexp_matches", "string_to_table"})


def _nodes(node: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield node
    for child in node.get("Plans", ()):
        yield from _nodes(child)


def _function_name(node: dict[str, Any]) -> str:
    """The called function of a Function Scan: the name before ``(`` of its output expression,
    without a schema (VERBOSE names it ``pg_catalog.unnest(...)``)."""
    name = str(node.get("Function Name") or "")
    if not name:
        call = str(node.get("Function Call") or "")
        name = call.split("(", 1)[0]
    return name.rsplit(".", 1)[-1].strip('"')


def plan_problem(explained: Any) -> str | None:
    roots = explained if isinstance(explained, list) else [explained]
    for root in roots:
        for node in _nodes(root["Plan"]):
            if "Relation Name" in node and node.get("Schema") != BASE_SCHEMA:
                return "sql may read only the agent views"
            kind = node.get("Node Type")
            if kind == "Function Scan" or "Function Name" in node:
                name = _function_name(node)
                if node.get("Schema", "pg_catalog") != "pg_catalog" \
                        or name not in ALLOWED_FUNCTIONS:
                    return f"sql calls a set-returning function that is not allowed: {name}"
            if kind in ("Table Function Scan", "Foreign Scan", "Custom Scan",
                        "Named Tuplestore Scan"):
                return "sql may read only the agent views"
    return None

"""The function allow-list of the registration check (issue 24): a template may call only
built-in functions that read nothing outside their arguments, and handle only values whose
input and output functions are such functions.

Allowed: a function of ``pg_catalog`` that came with the server (OID below 16384), declared
``IMMUTABLE`` and not known to read the catalogs, or one of the ``STABLE``/``VOLATILE`` value
functions listed below (they read the session's own time zone, date style or text search
configuration, or a random source, and nothing of the database). Everything else — catalog,
settings and statistics readers, dynamic SQL (``query_to_xml``...), advisory locks, sleeps,
large objects and files, transaction ids, ``set_config``, ``nextval`` — is refused, naming it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from context_service.adapters.postgres.sandbox.parse_tree import Calls

FIRST_NORMAL_OID = 16384  # objects below came with the server (FirstNormalObjectId)

_DATE_TIME = frozenset({
    "age", "date", "date_add", "date_subtract", "date_part", "date_trunc", "extract",
    "make_timestamptz", "now", "statement_timestamp", "transaction_timestamp", "timezone",
    "to_char", "to_date", "to_number", "to_timestamp", "time", "timestamp", "timestamptz",
    "timetz", "overlaps", "generate_series", "in_range", "interval_pl_timestamptz",
    "timestamptz_mi_interval", "timestamptz_pl_interval"})
# the cross-type comparisons of dates and timestamps (``date_lt_timestamptz``...)
_COMPARISONS = ("date_", "timestamp_", "timestamptz_")
_TEXT = frozenset({
    "anytextcat", "textanycat", "concat", "concat_ws", "format", "quote_literal",
    "quote_nullable", "array_to_string", "convert", "convert_from", "convert_to", "length"})
_JSON = frozenset({
    "array_to_json", "row_to_json", "to_json", "to_jsonb", "json_agg", "json_agg_strict",
    "json_build_array", "json_build_object", "json_object_agg", "json_object_agg_strict",
    "json_object_agg_unique", "json_object_agg_unique_strict", "jsonb_agg", "jsonb_agg_strict",
    "jsonb_build_array", "jsonb_build_object", "jsonb_path_exists_tz", "jsonb_path_match_tz",
    "jsonb_path_query_array_tz", "jsonb_path_query_first_tz", "jsonb_path_query_tz",
    "json_populate_record", "json_populate_recordset", "json_to_record", "json_to_recordset",
    "jsonb_populate_record", "jsonb_populate_record_valid", "jsonb_populate_recordset",
    "jsonb_to_record", "jsonb_to_recordset"})
_TEXT_SEARCH = frozenset({
    "to_tsvector", "to_tsquery", "plainto_tsquery", "phraseto_tsquery", "websearch_to_tsquery",
    "ts_headline", "ts_match_tq", "ts_match_tt", "json_to_tsvector", "jsonb_to_tsvector"})
# input and output of values (``regconfig``: the text search configuration of to_tsvector)
_INPUT_OUTPUT = frozenset({
    "array_in", "array_out", "record_in", "record_out", "range_in", "range_out",
    "multirange_in", "multirange_out", "anyarray_out", "anycompatiblearray_out", "anyrange_in",
    "anyrange_out", "anymultirange_in", "anymultirange_out", "anycompatiblerange_in",
    "anycompatiblerange_out", "anycompatiblemultirange_in", "anycompatiblemultirange_out",
    "date_in", "date_out", "time_in", "timetz_in", "timestamp_in", "timestamp_out",
    "timestamptz_in", "timestamptz_out", "interval_in", "interval_out", "cash_in", "cash_out",
    "money", "numeric", "regconfigin", "regconfigout"})
STABLE_ALLOWED = _DATE_TIME | _TEXT | _JSON | _TEXT_SEARCH | _INPUT_OUTPUT
VOLATILE_ALLOWED = frozenset({
    "random", "random_normal", "gen_random_uuid", "uuidv4", "uuidv7", "clock_timestamp",
    "timeofday", "array_sample", "array_shuffle"})
# declared IMMUTABLE, yet they look a relation or a parser up by OID
IMMUTABLE_REFUSED = frozenset({
    "pg_partition_root", "satisfies_hash_partition", "ts_parse", "ts_token_type",
    "pg_indexam_progress_phasename"})


@dataclass(frozen=True)
class Function:
    oid: int
    name: str
    in_catalog: bool  # schema pg_catalog
    volatility: str  # i, s or v
    kind: str  # f, a, w or p
    takes_xid: bool = False  # an argument of type xid


def allowed(function: Function) -> bool:
    if function.oid >= FIRST_NORMAL_OID or not function.in_catalog or function.kind == "p":
        return False
    if function.volatility == "i":
        return function.name not in IMMUTABLE_REFUSED
    if function.volatility == "s" and function.takes_xid:
        # ``age`` is listed for dates and times, but ``age(xid)`` reads the cluster's next
        # transaction id as ``txid_*`` do: how many transactions other workspaces committed
        return False
    if function.volatility == "s" and (function.name in STABLE_ALLOWED or (
            function.name.startswith(_COMPARISONS) and "timestamp" in function.name)):
        return True
    return function.volatility == "v" and function.name in VOLATILE_ALLOWED


_FUNCTIONS = ("SELECT p.oid::int8 AS oid, p.proname::text AS name,"
              " p.pronamespace = 'pg_catalog'::pg_catalog.regnamespace AS in_catalog,"
              " p.provolatile::text AS volatility, p.prokind::text AS kind,"
              " 'pg_catalog.xid'::pg_catalog.regtype::pg_catalog.oid"
              "  = ANY(p.proargtypes::pg_catalog.oid[]) AS takes_xid"
              " FROM pg_catalog.pg_proc p WHERE p.oid = ANY($1::pg_catalog.oid[])"
              " ORDER BY p.proname, p.oid")
_OPERATORS = ("SELECT o.oprcode::pg_catalog.oid::int8 FROM pg_catalog.pg_operator o"
              " WHERE o.oid = ANY($1::pg_catalog.oid[])")
# every type a value of the given types can hold (elements, domains' bases, ranges' subtypes,
# composites' columns), with its input and output functions
_TYPES = ("WITH RECURSIVE t(oid) AS ("
          " SELECT u FROM pg_catalog.unnest($1::pg_catalog.oid[]) u"
          " UNION SELECT s.x FROM t JOIN pg_catalog.pg_type y ON y.oid = t.oid,"
          "  LATERAL (SELECT y.typelem UNION ALL SELECT y.typbasetype UNION ALL"
          "   SELECT r.rngsubtype FROM pg_catalog.pg_range r"
          "    WHERE r.rngtypid = y.oid OR r.rngmultitypid = y.oid UNION ALL"
          "   SELECT a.atttypid FROM pg_catalog.pg_attribute a"
          "    WHERE y.typrelid <> 0 AND a.attrelid = y.typrelid AND a.attnum > 0"
          "    AND NOT a.attisdropped) s(x) WHERE s.x <> 0)"
          " SELECT y.typname::text AS name, y.typinput::pg_catalog.oid::int8 AS input,"
          " y.typoutput::pg_catalog.oid::int8 AS output"
          " FROM t JOIN pg_catalog.pg_type y ON y.oid = t.oid ORDER BY y.typname")


def _functions(conn: Any, oids: set[int]) -> dict[int, Function]:
    if not oids:
        return {}
    rows = conn.execute(_FUNCTIONS, [sorted(oids)]).fetchall()
    return {int(r[0]): Function(int(r[0]), str(r[1]), bool(r[2]), str(r[3]), str(r[4]),
                                bool(r[5])) for r in rows}


def functions_problem(conn: Any, found: Calls) -> str | None:
    """The first function the statement may not call (operators by their functions), as the
    refusal; None when all are allowed. ``conn`` reads the catalogs (any login may)."""
    functions = set(found.functions)
    if found.operators:
        rows = conn.execute(_OPERATORS, [sorted(found.operators)]).fetchall()
        functions.update(int(r[0]) for r in rows)
    known = _functions(conn, functions)
    for oid in sorted(functions, key=lambda o: (known[o].name if o in known else "", o)):
        function = known.get(oid)
        if function is None:
            return f"sql calls a function that is not allowed: {oid}"
        if not allowed(function):
            return f"sql calls a function that is not allowed: {function.name}"
    return None


def types_problem(conn: Any, found: Calls) -> str | None:
    """The first type the statement handles whose input or output function is not allowed
    (``regclass`` output names any relation by OID)."""
    if not found.types:
        return None
    types = conn.execute(_TYPES, [sorted(found.types)]).fetchall()
    io = _functions(conn, {int(r[1]) for r in types} | {int(r[2]) for r in types})
    for name, input_oid, output_oid in types:
        for oid in (int(input_oid), int(output_oid)):
            function = io.get(oid)
            if function is None or not allowed(function):
                return f"sql uses a type that is not allowed: {name}"
    return None

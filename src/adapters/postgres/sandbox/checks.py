"""The start-up check of every point of spec 11.5: the first failing point, or None.

Catalog facts are read on the service's login; the pinned settings and the login's identity on
a session of the restricted login itself.
"""

from __future__ import annotations

import re
from typing import Any

import psycopg

from context_service.adapters.postgres.sandbox.role import SIGNAL_FUNCTIONS, TEMP_FILE_LIMIT, VIEWS

_ATTRIBUTES = (("rolsuper", "superuser"), ("rolcreatedb", "createdb"),
               ("rolcreaterole", "createrole"), ("rolreplication", "replication"),
               ("rolbypassrls", "bypassrls"), ("rolinherit", "inherit"))
_PINNED = (("search_path", "agent"), ("default_transaction_read_only", "on"),
           ("statement_timeout", "10s"), ("track_activities", "off"))
# temp_file_limit is a ceiling, not a value: a lower one (an operator's own login, a small
# disk) bounds the spills more; -1 (none) or a higher one is refused. Shown in kB units.
_SIZE = re.compile(r"(\d+)(kB|MB|GB|TB)?")
_KILOBYTES = {None: 1, "kB": 1, "MB": 1 << 10, "GB": 1 << 20, "TB": 1 << 30}
_TABLE_PRIVILEGES = "SELECT, INSERT, UPDATE, DELETE, TRUNCATE, REFERENCES, TRIGGER, MAINTAIN"


def catalog_problem(cur: Any, role: str, service_login: str) -> str | None:
    """What the service's login sees in the catalogs."""
    if role == service_login:
        return "the restricted login must not be the service's login"
    cur.execute("SELECT * FROM pg_roles WHERE rolname = %s", (role,))
    found = cur.fetchone()
    if found is None:
        return f"login {role} does not exist"
    for column, attribute in _ATTRIBUTES:
        if found[column]:
            return f"login {role} must be NO{attribute.upper()}"
    if not found["rolcanlogin"]:
        return f"login {role} cannot log in"
    cur.execute("SELECT m.roleid::regrole::text AS parent FROM pg_auth_members m"
                " WHERE m.member = %s::regrole", (role,))
    member = cur.fetchone()
    if member is not None:
        return f"login {role} is a member of role {member['parent']}"
    cur.execute(
        "SELECT 1 FROM pg_class WHERE relowner = %(r)s::regrole UNION ALL"
        " SELECT 1 FROM pg_namespace WHERE nspowner = %(r)s::regrole UNION ALL"
        " SELECT 1 FROM pg_proc WHERE proowner = %(r)s::regrole UNION ALL"
        " SELECT 1 FROM pg_type WHERE typowner = %(r)s::regrole UNION ALL"
        " SELECT 1 FROM pg_database WHERE datdba = %(r)s::regrole LIMIT 1", {"r": role})
    if cur.fetchone() is not None:
        return f"login {role} owns objects"
    return _privilege_problem(cur, role) or _scope_problem(cur)


def _privilege_problem(cur: Any, role: str) -> str | None:
    cur.execute("SELECT has_database_privilege(%(r)s, current_database(), 'CONNECT') AS c,"
                " has_database_privilege(%(r)s, current_database(), 'CREATE') AS cr,"
                " has_database_privilege(%(r)s, current_database(), 'TEMPORARY') AS t",
                {"r": role})
    db = cur.fetchone()
    if not db["c"]:
        return f"login {role} lacks CONNECT on the database"
    if db["cr"] or db["t"]:
        return f"login {role} may create objects in the database"
    cur.execute("SELECT nspname FROM pg_namespace WHERE nspname NOT IN ('pg_catalog',"
                " 'information_schema') AND nspname NOT LIKE 'pg_toast%%'"
                " AND nspname NOT LIKE 'pg_temp%%' AND (has_schema_privilege(%(r)s, oid,"
                " 'CREATE') OR (nspname <> 'agent' AND has_schema_privilege(%(r)s, oid,"
                " 'USAGE'))) ORDER BY 1 LIMIT 1", {"r": role})
    schema = cur.fetchone()
    if schema is not None:
        return f"login {role} holds privileges on schema {schema['nspname']}"
    cur.execute("SELECT has_schema_privilege(%s, 'agent', 'USAGE') AS u", (role,))
    if not cur.fetchone()["u"]:
        return f"login {role} lacks USAGE on schema agent"
    cur.execute(
        "SELECT n.nspname || '.' || c.relname AS rel,"
        " has_table_privilege(%(r)s, c.oid, 'SELECT') AS s,"
        f" has_table_privilege(%(r)s, c.oid, '{_TABLE_PRIVILEGES}') AS any"
        " FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
        " WHERE c.relkind IN ('r', 'v', 'm', 'p', 'f', 'S')"
        " AND n.nspname NOT IN ('pg_catalog', 'information_schema')"
        " AND n.nspname NOT LIKE 'pg_toast%%' ORDER BY 1", {"r": role})
    views = {f"agent.{v}" for v in VIEWS}
    for row in cur.fetchall():
        if row["rel"] in views:
            cur.execute(f"SELECT has_table_privilege(%(r)s, %(v)s, '{_TABLE_PRIVILEGES}') AND"
                        " NOT has_table_privilege(%(r)s, %(v)s, 'INSERT, UPDATE, DELETE,"
                        " TRUNCATE, REFERENCES, TRIGGER, MAINTAIN') AS ok",
                        {"r": role, "v": row["rel"]})
            if not row["s"] or not cur.fetchone()["ok"]:
                return f"login {role} must hold exactly SELECT on {row['rel']}"
            views.discard(row["rel"])
        elif row["any"]:
            return f"login {role} holds privileges on {row['rel']}"
    if views:
        return f"view {sorted(views)[0]} is missing"
    for function in SIGNAL_FUNCTIONS:
        cur.execute("SELECT has_function_privilege(%s, %s, 'EXECUTE') AS x", (role, function))
        if cur.fetchone()["x"]:
            return f"EXECUTE on {function.split('(')[0]} is not revoked from PUBLIC"
    # migration 0016: catalog, settings and statistics readers, dynamic SQL, advisory locks,
    # sleeps, files, large objects and transaction ids
    cur.execute("SELECT name FROM agent_data.revoked_functions"
                " WHERE has_function_privilege(%s, function, 'EXECUTE') ORDER BY name LIMIT 1",
                (role,))
    executable = cur.fetchone()
    if executable is not None:
        return f"EXECUTE on {executable['name']} is not revoked from PUBLIC"
    cur.execute("SELECT extname FROM pg_extension WHERE extname IN ('dblink', 'postgres_fdw')"
                " ORDER BY 1 LIMIT 1")
    extension = cur.fetchone()
    if extension is not None:
        return f"extension {extension['extname']} is installed"
    return None


def _kilobytes(shown: str) -> int | None:
    """A ``temp_file_limit`` as PostgreSQL shows it (``1GB``, ``256MB``, ``0``) in kB; None
    for ``-1``, no limit at all."""
    found = _SIZE.fullmatch(shown.strip())
    return None if found is None else int(found[1]) * _KILOBYTES[found[2]]


def within_ceiling(shown: str) -> bool:
    """Whether a shown ``temp_file_limit`` bounds a session's temporary files to the pinned
    one (``role.TEMP_FILE_LIMIT``) or less."""
    kilobytes, ceiling = _kilobytes(shown), _kilobytes(TEMP_FILE_LIMIT)
    return kilobytes is not None and ceiling is not None and kilobytes <= ceiling


def session_problem(conninfo: str, role: str) -> str | None:
    """What a session of the restricted login reports about itself."""
    try:
        with psycopg.connect(conninfo, connect_timeout=5) as conn:
            row = conn.execute("SELECT session_user, current_user").fetchone()
            assert row is not None
            if row[0] != role or row[1] != role:
                return f"the restricted connection logs in as {row[0]}, not {role}"
            for setting, expected in _PINNED:
                value = conn.execute(
                    "SELECT current_setting(%s)", (setting,)).fetchone()
                if value is None or value[0] != expected:
                    return f"setting {setting} of login {role} must be {expected}"
            shown = conn.execute("SELECT current_setting('temp_file_limit')").fetchone()
            if shown is None or not within_ceiling(str(shown[0])):
                return (f"setting temp_file_limit of login {role} must be at most "
                        f"{TEMP_FILE_LIMIT}")
    except psycopg.Error as exc:
        return f"login {role} cannot connect ({type(exc).__name__})"
    return None


# every view of schema agent reads through the scope of the session, and that scope needs the
# session's own backend (0015): a token shown by a run opens nothing on another session
_UNSCOPED = ("SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
             " WHERE n.nspname = 'agent' AND NOT (c.relkind = 'v' AND EXISTS ("
             "  SELECT FROM pg_rewrite r JOIN pg_depend d ON d.objid = r.oid"
             "   AND d.classid = 'pg_rewrite'::regclass"
             "  WHERE r.ev_class = c.oid"
             "   AND d.refobjid = 'agent_data.run_collections'::regclass))"
             " ORDER BY 1 LIMIT 1")
_BOUND = ("SELECT pg_get_viewdef('agent_data.run_collections'::regclass) ~"
          " 'backend_pid = pg_backend_pid\\(\\)' AS bound")


def _scope_problem(cur: Any) -> str | None:
    cur.execute(_UNSCOPED)
    unscoped = cur.fetchone()
    if unscoped is not None:
        return f"agent.{unscoped['relname']} does not read through agent_data.run_collections"
    cur.execute(_BOUND)
    if not cur.fetchone()["bound"]:
        return "agent_data.run_collections does not bind the scope to the session's backend"
    return None

"""The managed restricted login (spec 11.5): created and kept by ``context-service migrate``.

Every attribute, setting and grant is (re)applied on each migrate, so drift is repaired; the
password is kept in ``service_secrets`` with the other service secrets.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets

from eventsourcing.postgres import PostgresDatastore
from psycopg import sql

ROLE = "cs_agent_query"
VIEWS = ("collections", "documents", "passages", "fields")
ATTRIBUTES = "LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS NOINHERIT"
# ``temp_file_limit``: a sort or hash past ``work_mem`` spills into temporary files, which
# nothing else bounds; runs stay under it (``53400`` past it), on the event log's disk
TEMP_FILE_LIMIT = "1GB"  # the most a run may spill (checks.py accepts a stricter one)
SETTINGS = (("search_path", "agent"), ("default_transaction_read_only", "on"),
            ("statement_timeout", "10000"), ("track_activities", "off"),
            ("temp_file_limit", TEMP_FILE_LIMIT))
SIGNAL_FUNCTIONS = ("pg_cancel_backend(integer)", "pg_terminate_backend(integer, bigint)")
_LOCK = 7340022


def login_password(datastore: PostgresDatastore) -> str:
    """The managed login's password: generated once, kept in ``service_secrets``."""
    with datastore.transaction(commit=True) as cur:
        cur.execute("INSERT INTO service_secrets (name, value) VALUES ('agent_query_password',"
                    " %s) ON CONFLICT (name) DO NOTHING",
                    (secrets.token_urlsafe(32).encode(),))
        cur.execute("SELECT value FROM service_secrets WHERE name = 'agent_query_password'")
        row = cur.fetchone()
    assert row is not None
    return bytes(row["value"]).decode()


def scram_verifier(password: str, iterations: int = 4096) -> str:
    """What PostgreSQL stores for ``password`` (SCRAM-SHA-256, RFC 5802 / 7677), sent in its
    place: a server logging statements (``log_statement = 'ddl'``, or a failing statement at
    ``log_min_error_statement``) then never writes the password itself."""
    salt = secrets.token_bytes(16)
    salted = hashlib.pbkdf2_hmac("sha256", password.encode(), salt, iterations)
    client_key = hmac.new(salted, b"Client Key", hashlib.sha256).digest()
    server_key = hmac.new(salted, b"Server Key", hashlib.sha256).digest()
    stored_key = hashlib.sha256(client_key).digest()

    def b64(raw: bytes) -> str:
        return base64.b64encode(raw).decode()

    return f"SCRAM-SHA-256${iterations}:{b64(salt)}${b64(stored_key)}:{b64(server_key)}"


def ensure_role(datastore: PostgresDatastore, password: str, role: str = ROLE) -> None:
    """Create or repair the login and its grants in the service database (needs a login that
    may create roles; the embedded server's is a superuser)."""
    name = sql.Identifier(role)
    with datastore.transaction(commit=True) as cur:
        cur.execute("SET LOCAL lock_timeout = 0")  # another instance may be doing the same
        cur.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK,))
        cur.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,))
        if cur.fetchone() is None:
            cur.execute(sql.SQL("CREATE ROLE {} " + ATTRIBUTES).format(name))
        cur.execute(sql.SQL("ALTER ROLE {} " + ATTRIBUTES + " PASSWORD {}").format(
            name, sql.Literal(scram_verifier(password))))
        for setting, value in SETTINGS:
            cur.execute(sql.SQL("ALTER ROLE {} SET {} = {}").format(
                name, sql.Identifier(setting), sql.Literal(value)))
        cur.execute("SELECT m.roleid::regrole::text AS parent FROM pg_auth_members m"
                    " JOIN pg_roles r ON r.oid = m.member WHERE r.rolname = %s", (role,))
        for row in cur.fetchall():
            cur.execute(sql.SQL("REVOKE {} FROM {}").format(sql.SQL(row["parent"]), name))
        cur.execute("SELECT current_database() AS db")
        current = cur.fetchone()
        assert current is not None
        database = sql.Identifier(current["db"])
        # PUBLIC keeps nothing the login could use: no temporary tables, no public schema
        cur.execute(sql.SQL("REVOKE ALL ON DATABASE {} FROM PUBLIC, {}").format(database, name))
        cur.execute(sql.SQL("GRANT CONNECT, TEMPORARY ON DATABASE {} TO CURRENT_USER").format(
            database))
        cur.execute(sql.SQL("GRANT CONNECT ON DATABASE {} TO {}").format(database, name))
        for schema in ("public", "agent_data", "agent"):
            cur.execute(sql.SQL("REVOKE ALL ON SCHEMA {} FROM PUBLIC, {}").format(
                sql.Identifier(schema), name))
            cur.execute(sql.SQL("REVOKE ALL ON ALL TABLES IN SCHEMA {} FROM PUBLIC, {}").format(
                sql.Identifier(schema), name))
        cur.execute(sql.SQL("GRANT USAGE ON SCHEMA agent TO {}").format(name))
        for view in VIEWS:
            cur.execute(sql.SQL("GRANT SELECT ON agent.{} TO {}").format(
                sql.Identifier(view), name))
        for function in SIGNAL_FUNCTIONS:
            cur.execute(f"REVOKE EXECUTE ON FUNCTION {function} FROM PUBLIC")

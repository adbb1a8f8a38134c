"""The managed query login's password never reaches the PostgreSQL server's log: ``migrate``
sends the SCRAM-SHA-256 verifier PostgreSQL stores, not the password, so a server logging its
DDL (``log_statement = 'ddl'``, a common audit setting) writes no secret. The verifier the
server keeps is the password's, and no other's."""

from __future__ import annotations

import base64
import hashlib
import hmac
from pathlib import Path

import psycopg
import pytest
from psycopg import sql

from context_service.adapters.postgres.database import open_datastore
from context_service.adapters.postgres.sandbox.role import (
    ROLE,
    ensure_role,
    login_password,
    scram_verifier,
)

pytestmark = pytest.mark.postgres


def test_a_verifier_never_holds_its_password() -> None:
    first, second = scram_verifier("s3cret-pass"), scram_verifier("s3cret-pass")
    assert first.startswith("SCRAM-SHA-256$4096:") and "s3cret" not in first
    assert first != second  # a fresh salt each time


def test_the_query_logins_password_never_reaches_the_servers_log(database_url: str) -> None:
    with psycopg.connect(database_url, autocommit=True) as conn:
        database = conn.execute("SELECT current_database()").fetchone()[0]  # type: ignore[index]
        conn.execute(sql.SQL("ALTER DATABASE {} SET log_statement = 'ddl'").format(
            sql.Identifier(database)))
        log = Path(conn.execute("SHOW data_directory").fetchone()[0]) / "log"  # type: ignore[index]
    logged_before = log.stat().st_size
    datastore = open_datastore(database_url, pool_size=1, max_overflow=0)
    try:
        password = login_password(datastore)
        ensure_role(datastore, password)
    finally:
        datastore.close()
    written = log.read_bytes()[logged_before:].decode(errors="replace")
    assert f'ALTER ROLE "{ROLE}"' in written  # the server did log the statement
    assert password not in written
    assert stored_verifier_matches(database_url, password)
    assert not stored_verifier_matches(database_url, password + "x")


def stored_verifier_matches(url: str, password: str) -> bool:
    """Whether the verifier PostgreSQL keeps for the login is ``password``'s (RFC 5802: the
    stored key is H(HMAC(Hi(password, salt, i), "Client Key"))): the server this suite runs
    trusts local logins, so a login alone would prove nothing."""
    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT rolpassword FROM pg_authid WHERE rolname = %s",
                           (ROLE,)).fetchone()
    assert row is not None
    method, rest = row[0].split("$", 1)
    head, keys = rest.split("$")
    iterations, salt = head.split(":")
    stored, _server = keys.split(":")
    salted = hashlib.pbkdf2_hmac("sha256", password.encode(), base64.b64decode(salt),
                                 int(iterations))
    client_key = hmac.new(salted, b"Client Key", hashlib.sha256).digest()
    return method == "SCRAM-SHA-256" and hashlib.sha256(client_key).digest() == \
        base64.b64decode(stored)

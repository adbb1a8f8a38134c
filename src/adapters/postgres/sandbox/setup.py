"""Wiring of the sandbox at start-up: the managed login (``CS_AGENT_QUERY_URL`` unset) is
created or repaired by migrate; then every point of spec 11.5 is checked and a failure logged;
a sandbox that passed opens its pool of restricted sessions.
"""

from __future__ import annotations

import logging

from eventsourcing.postgres import PostgresDatastore
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from context_service.adapters.postgres.sandbox.admission import RunLimits
from context_service.adapters.postgres.sandbox.checks import catalog_problem, session_problem
from context_service.adapters.postgres.sandbox.role import ROLE, ensure_role, login_password
from context_service.adapters.postgres.sandbox.scopes import Scopes
from context_service.adapters.postgres.sandbox.session import TemplateSandbox
from context_service.adapters.postgres.sandbox.sessions import Sessions

log = logging.getLogger(__name__)


def managed_conninfo(service_url: str, password: str) -> str:
    """The service's connection parameters with the managed login in place of its own."""
    params = conninfo_to_dict(service_url)
    params.update(user=ROLE, password=password)
    return make_conninfo(**params)  # type: ignore[arg-type]


def prepare_role(datastore: PostgresDatastore, query_url: str) -> None:
    """The migrate step: create or repair the managed login (nothing when the operator
    provides the login in ``CS_AGENT_QUERY_URL``). A refusal is logged; the check reports it."""
    if query_url:
        return
    try:
        ensure_role(datastore, login_password(datastore))
    except Exception as exc:  # e.g. a service login without CREATEROLE on an external server
        log.error("query template sandbox: the restricted login could not be maintained",
                  extra={"error": type(exc).__name__, "detail": str(exc).splitlines()[0]})


def open_sandbox(datastore: PostgresDatastore, service_url: str, query_url: str,
                 slots: int, wait_seconds: float = 0.5,
                 per_workspace: int = 2) -> TemplateSandbox:
    """The checked sandbox: ``slots`` sessions, runs admitted as ``admission.RunLimits``."""
    limits = RunLimits(sessions=slots, wait_seconds=wait_seconds, per_workspace=per_workspace)
    conninfo = query_url or managed_conninfo(service_url, login_password(datastore))
    role = str(conninfo_to_dict(conninfo).get("user") or "")
    with datastore.transaction(commit=False) as cur:
        cur.execute("SELECT current_user AS u")
        row = cur.fetchone()
        service_login = str(row["u"]) if row is not None else ""
        problem = catalog_problem(cur, role, service_login) if role else \
            "CS_AGENT_QUERY_URL names no user"
    if problem is None:
        problem = session_problem(conninfo, role)
    if problem is not None:
        log.error(f"query template sandbox is not configured: {problem}",
                  extra={"login": role, "point": problem})
        return TemplateSandbox(datastore, conninfo, problem)
    log.info("query template sandbox checked", extra={"login": role})
    # runs take pre-opened sessions; scope rows go through their own autocommit sessions, and a
    # session's return step deletes the rows bound to it before it serves another run
    scopes = Scopes(service_url, slots)
    try:
        scopes.clear_dead()  # left by a stop that could not drain, or by a crash
    except Exception as exc:  # they match nothing anyway; the first run's record retries
        log.warning("query template sandbox: dead scope rows not cleared",
                    extra={"error": type(exc).__name__})
    return TemplateSandbox(datastore, conninfo, None,
                           Sessions(conninfo, role, slots, scopes.release), scopes, limits)

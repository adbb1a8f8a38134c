"""Functions migration 0016 revokes from PUBLIC, granted back to the restricted login inside one
test's database: the deeper layers of the sandbox are shown to hold on their own, as if the
revocation were missing."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from context_service import bootstrap
from context_service.adapters.postgres.sandbox.role import ROLE

SLEEP = "pg_sleep(double precision)"
SET_CONFIG = "set_config(text, text, boolean)"
ADVISORY = ("pg_advisory_lock(bigint)", "pg_advisory_lock_shared(bigint)")


@contextmanager
def executable(container: bootstrap.Container, *functions: str) -> Iterator[None]:
    def apply(statement: str) -> None:
        with container.datastore.transaction(commit=True) as cur:
            for function in functions:
                cur.execute(statement.format(function=function, role=ROLE))

    apply("GRANT EXECUTE ON FUNCTION {function} TO {role}")
    try:
        yield
    finally:
        apply("REVOKE EXECUTE ON FUNCTION {function} FROM {role}")

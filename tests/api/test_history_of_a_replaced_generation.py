"""Spec 1.6 and 1.10: a context's revisions and audit are those of the generation the caller
was found allowed to read. A context deleted and created again between that check and the
reading of where its history ends (a moment, but another caller's) gave the new generation's
revisions and audit entries too, with the permission of the old one: the reading ended at the
newest row of the stream, whichever generation held it."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from context_service import bootstrap
from context_service.adapters.postgres.views.contexts import ContextReadsSql, RevisionSql
from context_service.domain.stream import context_stream
from tests.api.conftest import Api
from tests.api.test_audit_streaming import serve
from tests.api.test_revisions_streaming import NAME, NS, REVISIONS, fill, one_body, owner, revision

__all__ = ["owner"]  # the fixture, used by name
LATER = 10_000_000  # a position past every event of the test's log


def _created_again(container: bootstrap.Container) -> None:
    """What the views hold once the context was deleted and created again by another caller,
    and the new generation published a revision and recorded an audit entry."""
    stream = context_stream(NS, NAME).id
    with container.datastore.transaction(commit=True) as cur:
        cur.execute("UPDATE context_catalog SET created_position = %s WHERE stream_id = %s",
                    (LATER, stream))
        RevisionSql(cur).append([(stream, LATER + 1, 0, revision(99_999))])
        cur.execute("INSERT INTO audit_log (stream_id, position, seq, time, action, subject)"
                    " VALUES (%s, %s, 0, %s, 'grant.set', %s::jsonb)",
                    (stream, LATER + 1, datetime(2026, 2, 1, tzinfo=UTC),
                     '{"kind": "user", "name": "mallory"}'))


@pytest.mark.parametrize("last", ["revisions_last", "audit_last"])
def test_a_generation_created_after_the_check_is_not_read(
        owner: Api, container: bootstrap.Container, monkeypatch: pytest.MonkeyPatch,
        last: str) -> None:
    fill(container, 30)
    expected_revisions = one_body(container)
    expected_audit = owner.get(f"/v1/namespaces/{NS}/contexts/{NAME}/audit").content
    read = getattr(ContextReadsSql, last)

    def replaced(self: ContextReadsSql, *args: Any, **kwargs: Any) -> Any:
        _created_again(container)
        return read(self, *args, **kwargs)

    monkeypatch.setattr(ContextReadsSql, last, replaced)
    path = REVISIONS if last == "revisions_last" else REVISIONS.replace("revisions", "audit")
    served = serve(owner, path)
    assert (served.status, served.error) == (200, None)
    assert bytes(served.body) == (expected_revisions if last == "revisions_last"
                                  else expected_audit)

"""SQL of the workspace picker: the namespaces where a subject holds a role, read from the
``workspace_members`` view (the bootstrap administrator sees every workspace with members)."""

from __future__ import annotations

from eventsourcing.postgres import PostgresDatastore

from context_service.domain.events import ADMIN, Subject


class WorkspacesSql:
    def __init__(self, datastore: PostgresDatastore) -> None:
        self.datastore = datastore

    def of(self, subject: Subject) -> list[tuple[str, str]]:
        """``(namespace, role)`` pairs sorted by namespace (names are UTF-8 ``bytea``, so byte
        order is code-point order); the bootstrap administrator acts as owner of every
        namespace that has members."""
        with self.datastore.transaction(commit=False) as cur:
            if subject == ADMIN:
                cur.execute("SELECT DISTINCT namespace, 'owner' AS role FROM workspace_members"
                            " ORDER BY namespace")
            else:
                cur.execute("SELECT namespace, role FROM workspace_members"
                            " WHERE sha256(subject) = sha256(%(s)s) AND subject = %(s)s"
                            " ORDER BY namespace", {"s": subject.key.encode()})
            return [(bytes(r["namespace"]).decode(), str(r["role"])) for r in cur.fetchall()]

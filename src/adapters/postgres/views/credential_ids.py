"""Every credential id of the ``agent_credentials`` view: what the access directory reads once
after each reset, so that it can answer an unknown id from memory."""

from __future__ import annotations

from eventsourcing.postgres import PostgresDatastore


def credential_ids(datastore: PostgresDatastore) -> list[str]:
    with datastore.transaction(commit=False) as cur:
        cur.execute("SELECT id FROM agent_credentials")
        return [str(row["id"]) for row in cur.fetchall()]

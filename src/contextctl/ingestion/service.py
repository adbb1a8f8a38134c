"""The service side of an ingestion, over the same routes and upload code as ``ctx publish`` and
``index push``: find (or create) the context, tell whether its current revision already has its
index, publish the revision, send the index (one body or parts, all or nothing)."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from context_service.contextctl.client import Client, CommandError, Reply, ServiceError, segment
from context_service.contextctl.client import context_path as path_of
from context_service.contextctl.local.records import INDEXED_TYPES
from context_service.contextctl.upload import IndexUpload, MultiPart, Sender, sender_for
from context_service.contract.query import MAX_PARTS

DEFAULT_TYPE = "knowledge"


class PositionClient(Client):
    """A client that remembers the log position of the last write it saw (the upload code
    sends through it and keeps no replies)."""

    def __init__(self, inner: Client) -> None:  # shares the inner client's connection
        self.inner = inner
        self.settings = inner.settings
        self.position: int | None = None

    def request(self, method: str, path: str, **kwargs: Any) -> Reply:
        reply = self.inner.request(method, path, **kwargs)
        if reply.position is not None:
            self.position = reply.position
        return reply

    def close(self) -> None:
        self.inner.close()


def context_of(client: Client, namespace: str, name: str, wanted: str | None, create: bool,
               storage_class: str = "",
               before_create: Callable[[str], object] = lambda _: None,
               ) -> tuple[dict[str, Any], bool]:
    """The context (and whether it was created now); its type must carry a query index.
    ``before_create`` is called with the type of a context about to be created (it may refuse)."""
    try:
        context: dict[str, Any] = client.get(path_of(namespace, name)).data
        created = False
    except ServiceError as exc:
        if exc.status != 404:
            raise
        if not create:
            raise CommandError(f"context {name} does not exist in namespace {namespace}: pass "
                               "--create to create it") from exc
        before_create(wanted or DEFAULT_TYPE)
        storage = {"backend": "pvc", "size": "1Gi", "accessMode": "ReadWriteOnce"}
        if storage_class:
            storage["storageClass"] = storage_class
        context = client.post("/v1/contexts", {
            "name": name, "namespace": namespace, "type": wanted or DEFAULT_TYPE,
            "storage": storage}).data
        created = True
    kind = str(context.get("type", ""))
    if kind not in INDEXED_TYPES:
        raise CommandError(f"{name} is a {kind} context: ingest publishes a query index, which "
                           "only memory and knowledge contexts carry")
    if wanted is not None and wanted != kind:
        raise CommandError(f"{name} is a {kind} context, not {wanted}")
    return context, created


def index_current(client: Client, namespace: str, name: str, record_id: str) -> bool:
    """Whether the context's index was published for its current revision (the query route
    names it ``unavailable`` otherwise)."""
    reply = client.post(f"/v1/namespaces/{segment(namespace)}/query",
                        {"contexts": [name], "ids": [record_id], "limit": 1})
    return name not in (reply.data.get("unavailable") or []) and bool(reply.data.get("items"))


def publish_revision(client: Client, namespace: str, name: str, body: Mapping[str, Any]) -> None:
    client.post(path_of(namespace, name, "revisions"), dict(body))


def index_sender(namespace: str, name: str, revision: str, records: list[dict[str, Any]],
                 part_size: int | None) -> Sender:
    """How the index will be sent (one body or parts); a ``CommandError`` names a record no part
    can hold. Made before anything is written, so that such a record publishes nothing."""
    encoded = [json.dumps(r, separators=(",", ":"), ensure_ascii=False).encode()
               for r in records]
    sender = sender_for(IndexUpload(namespace, name, revision, encoded), part_size)
    if isinstance(sender, MultiPart) and len(sender.parts) > MAX_PARTS:
        # the service refuses such an upload at its first part, after the revision is published
        raise CommandError(
            f"the index needs {len(sender.parts):,} parts of at most {sender.limits.body:,} "
            f"bytes and an upload has at most {MAX_PARTS:,}: pass a larger --part-size; "
            "nothing was sent")
    return sender


def send_index(client: PositionClient, sender: Sender,
               progress: Callable[[int | None], Callable[[int], None]]) -> int | None:
    """Sends the index; the position of its publication (the last write)."""
    advance = progress(sender.total())
    sender.send(client, advance)
    return client.position

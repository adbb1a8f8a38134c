"""``contextctl ingest`` stopped between its revision and its index, against a served process: an
upload the service refuses halfway, or one interrupted (Ctrl-C), says that the revision is
published without its index (so queries report the context unavailable) and that running the
command again sends it; the run again ends with the same revision and a usable index."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from context_service.contextctl.client import Client, Reply, ServiceError
from context_service.contextctl.ingestion import ingest
from context_service.contextctl.ingestion import service as ingest_service
from context_service.contextctl.settings import Settings
from tests.contextctl.conftest import Cli
from tests.e2e.server import ServerProcess

pytestmark = [pytest.mark.e2e, pytest.mark.postgres]
OTHER_REVISION = "ab" * 32


def book(folder: Path) -> Path:
    folder.mkdir()
    (folder / "book.md").write_text("# Book\n\n" + "".join(
        f"## Chapter {n}\n\nThe ledger entry {n} records a transfer between tenants.\n\n"
        for n in range(300)))
    return folder


class PublishingMidUpload(Client):
    """The real client, which once the first part of an index has been accepted publishes
    another revision (as another producer might), so that the service refuses the next part."""

    def __init__(self, settings: Settings) -> None:
        super().__init__(settings)
        self.parts = 0

    def request(self, method: str, path: str, *, body: Any = None,
                params: Any = None, content: Iterable[bytes] | None = None,
                headers: Any = None) -> Reply:
        reply = super().request(method, path, body=body, params=params, content=content,
                                headers=headers)
        if method == "PUT" and path.endswith("/query-index"):
            self.parts += 1
            if self.parts == 1:
                super().request("POST", path.removesuffix("query-index") + "revisions", body={
                    "id": OTHER_REVISION, "createdAt": "2026-12-06T00:00:00Z",
                    "operation": "sync", "producer": "someone-else", "files": 0, "bytes": 0})
        return reply


def query_ids(cli: Cli, ns: tuple[str, str], *ids: str) -> dict[str, Any]:
    found = cli("query", *(a for i in ids for a in ("--id", i)), "--json", *ns)
    assert found.code == 0, found.err
    data: dict[str, Any] = json.loads(found.out)
    return data


def test_part_refused_halfway_says_what_is_left_and_a_run_again_ends_at_the_revision(
        service: ServerProcess, cli: Cli, tmp_path: Path) -> None:
    folder = book(tmp_path / "kb")
    settings = Settings(url=service.url, subject="user:alice", namespace="ingest-review-part")
    client = PublishingMidUpload(settings)
    with pytest.raises(ServiceError) as refused:
        ingest([folder], context="kb", create=True, part_size=8192, settings=settings,
               client=client)
    client.close()
    expected = ingest([folder], context="kb", dry_run=True, part_size=8192).revision
    message = str(refused.value)
    assert "query index revision must match the current context revision" in message
    assert (f"revision {expected[:12]} is published without its index: queries report kb "
            "unavailable until the same command is run again, which sends it") in message

    again = ingest([folder], context="kb", part_size=8192, settings=settings)
    assert (again.outcome, again.revision) == ("published", expected)
    ns = ("-n", "ingest-review-part")
    found = query_ids(cli, ns, "book.md#chapter-299:1")
    assert [i["record"]["id"] for i in found["items"]] == ["book.md#chapter-299:1"]


def test_interrupted_upload_says_what_is_left_and_a_run_again_sends_the_index(
        cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = book(tmp_path / "kb")
    ns = ("-n", "ingest-review-interrupt")

    def interrupted(*_: object) -> int | None:  # Ctrl-C as the upload starts
        raise KeyboardInterrupt

    with monkeypatch.context() as patch:
        patch.setattr(ingest_service, "send_index", interrupted)
        stopped = cli("ingest", str(folder), "--context", "kb", "--create", *ns)
    assert stopped.code == 130
    revision = ingest([folder], context="kb", dry_run=True).revision
    assert (f"revision {revision[:12]} is published without its index: queries report kb "
            "unavailable until the same command is run again, which sends it") in stopped.err
    assert query_ids(cli, ns, "book.md#chapter-0:1")["unavailable"] == ["kb"]

    again = cli("ingest", str(folder), "--context", "kb", "--json", *ns)
    assert again.code == 0, again.err
    assert (json.loads(again.out)["outcome"], json.loads(again.out)["revision"]) == (
        "indexed", revision)
    listed = cli("ctx", "revisions", "kb", "--json", *ns)
    assert [r["id"] for r in json.loads(listed.out)["items"]] == [revision]
    assert query_ids(cli, ns, "book.md#chapter-0:1")["items"]

"""``contextctl ingest`` against a served process: a generated folder of every format with every
kind of bad input, the records it publishes (titles, files, times), its revision's provenance,
idempotency, stable ids across a re-ingest with one changed file (replays stay ``unchanged``),
``--dry-run``, ``--create``, an index sent in parts, and the Python function the command calls."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from context_service.contextctl.ingestion import IngestReport, ingest
from context_service.contextctl.settings import Settings
from tests.contextctl.conftest import Cli
from tests.contextctl.ingest_fixture import BAD_REASONS, bad_folder, good_folder
from tests.contextctl.test_agent_sets import credential, workspace
from tests.e2e.server import ServerProcess

pytestmark = [pytest.mark.e2e, pytest.mark.postgres]
GOOD_FILES = ["chats/locomo.json", "chats/support.jsonl", "chats/thread.json", "guide.md",
              "nested/deeper/notes.txt", "nested/page.html", "nested/report.pdf"]


def report(cli: Cli, *args: str) -> dict[str, Any]:
    done = cli("ingest", *args, "--json")
    assert done.code == 0, done.err
    data: dict[str, Any] = json.loads(done.out)
    return data


def records(cli: Cli, ns: tuple[str, str], *ids: str) -> dict[str, dict[str, Any]]:
    found = cli("query", *(a for i in ids for a in ("--id", i)), "--limit", "100", "--json", *ns)
    assert found.code == 0, found.err
    return {r["record"]["id"]: r["record"] for r in json.loads(found.out)["items"]}


def revisions(cli: Cli, name: str, ns: tuple[str, str]) -> list[dict[str, Any]]:
    listed = cli("ctx", "revisions", name, "--json", *ns)
    assert listed.code == 0, listed.err
    items: list[dict[str, Any]] = json.loads(listed.out)["items"]
    return items


def test_bad_inputs_are_named_and_nothing_is_published(cli: Cli, tmp_path: Path) -> None:
    ns = ("-n", "ingest-bad")
    folder = bad_folder(tmp_path / "docs")
    refused = cli("ingest", str(folder), "--context", "kb", "--create", *ns)
    assert refused.code == 1
    assert refused.err.startswith(f"contextctl: {len(BAD_REASONS)} of {len(BAD_REASONS) + 7} "
                                  "files cannot be ingested; nothing was published")
    for file, reason in BAD_REASONS.items():
        assert f"\n  {file}: {reason}" in refused.err
    assert cli("ctx", "get", "kb", *ns).code == 1  # not even created

    skipped = report(cli, str(folder), "--context", "kb", "--create", "--skip-bad", *ns)
    assert [s["file"] for s in skipped["skipped"]] == sorted(BAD_REASONS)
    assert (skipped["outcome"], skipped["created"], skipped["files"], skipped["passages"]) == (
        "published", True, 7, 16)
    assert skipped["ignored"] == ["logo.png", "schema.json"]
    assert skipped["position"] > 0 and skipped["tokens"] > 0
    text = cli("ingest", str(folder), "--context", "kb", "--skip-bad", *ns)
    assert text.code == 0, text.err
    assert "Skipped (cannot be read):" in text.out and "bad/junk.txt" in text.out


def test_records_titles_files_times_and_provenance(cli: Cli, tmp_path: Path) -> None:
    ns = ("-n", "ingest-records")
    folder = good_folder(tmp_path / "handbook")
    done = report(cli, str(folder), "--context", "handbook", "--create", *ns)
    assert (done["type"], done["files"], done["passages"]) == ("knowledge", 7, 16)
    found = records(cli, ns, "guide.md#linux:1", "guide.md#1", "nested/page.html#failover:1",
                    "nested/report.pdf#p2:1", "chats/support.jsonl#m2:1",
                    "chats/locomo.json#conv-1/d1-2:1", "nested/deeper/notes.txt#1")
    linux = found["guide.md#linux:1"]
    assert (linux["title"], linux["file"], linux["revision"]) == (
        "Guide \u203a Install \u203a Linux", "guide.md", done["revision"])
    assert "apt-get install orchard" in linux["text"] and "port 7400" in linux["text"]
    assert found["guide.md#1"]["text"] == "Read this guide before the first deployment."
    failover = found["nested/page.html#failover:1"]
    assert failover["title"] == "Incident runbook \u203a Failover"
    assert "west | db-west-2" in failover["text"] and "alert" not in failover["text"]
    assert found["nested/report.pdf#p2:1"]["title"] == "People"
    assert "three site reliability engineers" in found["nested/report.pdf#p2:1"]["text"]
    support = found["chats/support.jsonl#m2:1"]
    assert (support["text"], support["validFrom"]) == (
        "assistant: I moved invoice 4411 to tenant blue.", "2026-03-02T08:16:30Z")
    turn = found["chats/locomo.json#conv-1/d1-2:1"]
    assert (turn["title"], turn["validFrom"]) == (
        "conv-1 \u203a Session 1 (1:56 pm on 8 May, 2023)", "2023-05-08T13:56:00Z")
    assert turn["text"] == "Ben: Lovely! Send a picture. [shares a photo: a grey dog on a sofa]"
    assert found["nested/deeper/notes.txt#1"]["title"] == "notes.txt"
    (revision,) = revisions(cli, "handbook", ns)
    assert revision["id"] == done["revision"]
    assert (revision["operation"], revision["producer"], revision["files"]) == (
        "ingest", "contextctl", 7)
    assert revision["bytes"] == done["bytes"] == sum(
        (folder / f).stat().st_size for f in GOOD_FILES)
    assert revision["parameters"] == {"chunker": "contextctl-ingest/6", "maxTokens": "256",
                                      "tokenizer": "l2_supercat"}


def test_the_same_files_again_record_nothing(cli: Cli, tmp_path: Path) -> None:
    ns = ("-n", "ingest-again")
    folder = good_folder(tmp_path / "kb")
    first = report(cli, str(folder), "--context", "kb", "--create", *ns)
    again = cli("ingest", str(folder), "--context", "kb", *ns)
    assert again.code == 0, again.err
    assert again.out.startswith("Nothing to record: the context is at this revision with its "
                                "index\n")
    assert f"Revision: {first['revision']}" in again.out and "Position" not in again.out
    quiet = report(cli, str(folder), "--context", "kb", *ns)
    assert (quiet["outcome"], quiet["recorded"], quiet["position"]) == ("unchanged", False, None)
    assert quiet["revision"] == first["revision"]
    assert len(revisions(cli, "kb", ns)) == 1
    finer = report(cli, str(folder), "--context", "kb", "--max-tokens", "32", *ns)
    assert finer["outcome"] == "published" and finer["revision"] != first["revision"]


def test_changed_file_keeps_other_ids_and_replays_unchanged(cli: Cli, tmp_path: Path) -> None:
    ns = workspace(cli, "ingest-stable")
    folder = good_folder(tmp_path / "docs")
    before = report(cli, str(folder), "--context", "docs", "--create", "--dry-run", *ns)
    first = report(cli, str(folder), "--context", "docs", "--create", *ns)
    agent = {"CS_AGENT_TOKEN": credential(cli, ns)}
    asked = cli("agent", "pack", "How do I install the orchard package on Linux?",
                "--source", "passages", "--valid-time", "2026-06-01T00:00:00Z", "--json",
                **agent)
    assert asked.code == 0, asked.err
    pack = json.loads(asked.out)
    top = pack["items"][0]
    assert top["id"] == "psg:docs/guide.md#linux:1"  # the right file and heading
    assert top["source"]["documentId"] == "docs/guide.md"
    assert "apt-get install orchard" in top["text"]

    notes = folder / "nested" / "deeper" / "notes.txt"
    notes.write_text(notes.read_text().replace("35 days", "90 days"))
    after = report(cli, str(folder), "--context", "docs", "--dry-run", *ns)
    second = report(cli, str(folder), "--context", "docs", *ns)
    assert second["outcome"] == "published" and second["revision"] != first["revision"]
    old = {r["id"]: r for r in before["records"]}
    new = {r["id"]: r for r in after["records"]}
    assert set(old) == set(new)
    changed = {i for i in old if old[i]["text"] != new[i]["text"]}
    assert changed == {"nested/deeper/notes.txt#1"}
    verified = cli("agent", "replay", pack["replayId"], "verify", "--json", **agent)
    assert verified.code == 0, verified.err
    statuses = {i["id"]: i["status"] for i in json.loads(verified.out)["items"]}
    assert statuses and all(status == "unchanged" for item, status in statuses.items()
                            if "notes.txt" not in item)


def test_dry_run_sends_nothing(cli: Cli, tmp_path: Path) -> None:
    ns = ("-n", "ingest-dry")
    folder = good_folder(tmp_path / "kb")
    offline = cli("ingest", str(folder), "--context", "kb", "--dry-run", "--json", *ns,
                  CS_URL="http://127.0.0.1:9")
    assert offline.code == 0, offline.err
    data = json.loads(offline.out)
    assert (data["outcome"], data["passages"], len(data["records"])) == ("dry-run", 16, 16)
    assert data["records"][0] == {
        "id": "chats/locomo.json#conv-1/d1-1:1", "context": "kb", "type": "knowledge",
        "revision": data["revision"], "title": "conv-1 \u203a Session 1 (1:56 pm on 8 May, 2023)",
        "text": "Ana: I adopted a greyhound named Comet.", "file": "chats/locomo.json",
        "validFrom": "2023-05-08T13:56:00Z"}
    shown = cli("ingest", str(folder), "--context", "kb", "--dry-run", *ns)
    assert "guide.md#linux:1" in shown.out and "Would publish (dry run" in shown.out
    assert cli("ctx", "get", "kb", *ns).code == 1


def test_context_must_exist_or_be_created(cli: Cli, tmp_path: Path) -> None:
    ns = ("-n", "ingest-create")
    folder = good_folder(tmp_path / "chats")
    missing = cli("ingest", str(folder / "chats"), "--context", "talk", *ns)
    assert (missing.code, missing.err) == (1, "contextctl: context talk does not exist in "
                                              "namespace ingest-create: pass --create to create "
                                              "it\n")
    made = report(cli, str(folder / "chats"), "--context", "talk", "--create", "--type",
                  "memory", *ns)
    assert (made["type"], made["created"], made["files"]) == ("memory", True, 3)
    wrong = cli("ingest", str(folder / "chats"), "--context", "talk", "--type", "knowledge", *ns)
    assert (wrong.code, wrong.err) == (1, "contextctl: talk is a memory context, not knowledge\n")
    assert cli("ctx", "create", "box", *ns).code == 0
    workspace_type = cli("ingest", str(folder / "guide.md"), "--context", "box", *ns)
    assert workspace_type.code == 1 and "box is a workspace context" in workspace_type.err


def test_large_index_in_parts(cli: Cli, tmp_path: Path) -> None:
    ns = ("-n", "ingest-parts")
    book = tmp_path / "book.md"
    book.write_text("# Book\n\n" + "".join(
        f"## Chapter {n}\n\nThe ledger entry {n} records a transfer between tenants.\n\n"
        for n in range(300)))
    # about 60 KB of records: parts of at most 8 KiB
    done = report(cli, str(book), "--context", "book", "--create", "--part-size", "8192", *ns)
    assert done["passages"] == 300 and done["outcome"] == "published"
    found = cli("query", "ledger", "--all", "--json", "--limit", "100", *ns)
    items = json.loads(found.out)["items"]
    assert len(items) == 300 and {i["record"]["file"] for i in items} == {"book.md"}
    assert records(cli, ns, "book.md#chapter-299:1")["book.md#chapter-299:1"]["title"] == (
        "Book \u203a Chapter 299")


def test_python_function(service: ServerProcess, tmp_path: Path) -> None:
    folder = good_folder(tmp_path / "kb")
    settings = Settings(url=service.url, subject="user:alice", namespace="ingest-api")
    done = ingest([folder], context="kb", create=True, settings=settings)
    assert isinstance(done, IngestReport)
    assert (done.outcome, done.recorded, done.passages, done.namespace) == (
        "published", True, 16, "ingest-api")
    again = ingest([folder / "guide.md", folder / "nested"], context="kb", settings=settings)
    assert again.outcome == "published" and again.files == 4  # other files, another revision
    assert again.revision != done.revision


def test_nothing_readable(cli: Cli, tmp_path: Path) -> None:
    (tmp_path / "empty.md").write_bytes(b"")
    (tmp_path / "photo.png").write_bytes(b"png")
    refused = cli("ingest", str(tmp_path), "--context", "kb", "--skip-bad", "-n", "ingest-none")
    assert (refused.code, refused.err) == (1, "contextctl: the file cannot be ingested; "
                                              "nothing was published:\n  empty.md: empty file\n")
    (tmp_path / "empty.md").unlink()
    nothing = cli("ingest", str(tmp_path), "--context", "kb", "-n", "ingest-none")
    assert (nothing.code, nothing.err) == (1, "contextctl: nothing to ingest: no file of a "
                                              "supported format gave any text\n")
    usage = cli("ingest", "--context", "kb")
    assert usage.code == 2 and "Missing argument 'PATHS...'" in usage.err

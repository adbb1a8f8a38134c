"""``ctx sync push``: a context of the local store (spec §7.3) to the named context of the same
name on the service: its files copied to where the context's volume is mounted, its revision
published, and, for memory and knowledge, its query index (spec §5.5) published for that
revision. Each step is skipped when the service already has it, so pushing again records
nothing."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import click

from context_service.contextctl import output, s3, volume
from context_service.contextctl.client import Client, CommandError, context_path, segment
from context_service.contextctl.contexts import context_argument
from context_service.contextctl.index import progress_bar
from context_service.contextctl.ingestion import service
from context_service.contextctl.local import (
    LocalContext,
    LocalStore,
)
from context_service.contextctl.local_commands import key_values, store_group
from context_service.contextctl.options import App, namespace_option, pass_app
from context_service.contextctl.upload import MAX_BODY

OPERATION = "sync"
PRODUCER = "contextctl"
QUERY_LIMIT = 100  # the service's largest query page (spec 2.9)

sync = store_group("sync", "Move contexts of the local store (CS_CONTEXT_HOME) to the service.")


@sync.command(name="push", help="Push a context of the local store to the named context of the "
              "same name: record its files as a revision of the local store (when they changed), "
              "copy them to the context's mounted volume (--to), publish the revision and, for "
              "memory and knowledge, the query index of its records. Pushing unchanged files "
              "again publishes nothing.")
@context_argument
@click.option("--to", "destination", default=None, metavar="DIR|s3://BUCKET/PREFIX",
              help="Where the files go: the directory where the context's volume is mounted "
              "(its portable roots harnesses, memory, knowledge and artifacts become the local "
              "ones), or an S3 prefix (one bundle per revision, and PREFIX/current naming it).")
@click.option("--publish-only", is_flag=True, help="Copy no files: publish the revision and the "
              "index only (the files reach the volume by another path).")
@click.option("--local", "local_name", default=None, metavar="NAME",
              help="The local context to push (default: the same name).")
@click.option("--producer", default=PRODUCER, show_default=True,
              help="The revision's producer, when a new one is recorded.")
@click.option("--param", "params", multiple=True, metavar="KEY=VALUE",
              help="A parameter of a new revision (repeatable).")
@click.option("--part-size", type=click.IntRange(4096, MAX_BODY), default=None, metavar="BYTES",
              help="The largest request body to send (as index push).")
@click.option("--progress/--no-progress", default=True, show_default=True,
              help="Progress bars on a terminal.")
@click.option("--json", "as_json", is_flag=True, help="Print what was done as JSON.")
@namespace_option
@pass_app
def push(app: App, name: str, destination: str | None, publish_only: bool,
         local_name: str | None, producer: str, params: tuple[str, ...], part_size: int | None,
         progress: bool, as_json: bool, namespace: str | None) -> None:
    if (destination is None) == (not publish_only):
        raise click.UsageError("pass exactly one of --to DIR and --publish-only")
    if destination is not None and not destination.strip():
        # an unset variable (--to "$MOUNT") must not make the working directory the volume
        raise click.BadParameter("--to must name a directory or s3://BUCKET/PREFIX",
                                 param_hint="--to")
    parameters = key_values(params, "--param")
    ns = app.namespace(namespace)
    local = LocalStore.from_environment().open(local_name or name)
    remote: dict[str, Any] = app.client.get(context_path(ns, name)).data
    if remote.get("type") != local.type:
        raise CommandError(f"{name} is a {remote.get('type')} context and the local "
                           f"{local.name} a {local.type} one: a push keeps its type")
    revision = local.content().revision
    records = local.records(revision) if local.type in service.INDEXED_TYPES else None
    sender = (None if records is None else
              service.index_sender(ns, name, revision, records, part_size))
    if destination is not None:
        transfer(local, destination, revision, progress)
    # recorded in the local store only once the files arrived, and only as they were sent
    entry, recorded = local.publish(OPERATION, producer, parameters)
    if entry["id"] != revision:
        raise CommandError(f"the files of {local.name} changed during the push: push again")
    published = remote.get("currentRevision") != revision
    if published:
        service.publish_revision(app.client, ns, name, entry)
    indexed = False
    if sender is not None and records is not None and (
            published or not records or not index_holds(app.client, ns, name, records)):
        http = service.PositionClient(app.client)
        with progress_bar(progress) as bar:
            service.send_index(http, sender, lambda total: _advance(bar, total))
        indexed = True
    report = {"context": name, "namespace": ns, "type": local.type, "local": local.name,
              "revision": revision,
              "files": entry.get("files", 0), "bytes": entry.get("bytes", 0),
              "recorded": recorded,
              "transferred": destination,
              "revisionPublished": published,
              "index": None if records is None else {"records": len(records),
                                                     "published": indexed}}
    output.emit_data(report, output.JSON if as_json else output.TEXT, _print)


def index_holds(client: Client, namespace: str, name: str,
                records: Sequence[Mapping[str, Any]]) -> bool:
    """Whether the index the service uses for the context (one of its current revision) holds
    exactly these records: each asked for by id, compared field by field. Its first id alone
    would not do: an index published for the revision by another hand (``index push`` of
    other records) may share it. An index holding further records under other ids cannot be
    seen through the query route."""
    wanted = Counter(_served_form(r) for r in records)
    found: Counter[str] = Counter()
    ids = sorted({str(r.get("id", "")) for r in records})
    for start in range(0, len(ids), QUERY_LIMIT):
        body: dict[str, Any] = {"contexts": [name], "ids": ids[start:start + QUERY_LIMIT],
                                "limit": QUERY_LIMIT}
        while True:
            page = client.post(f"/v1/namespaces/{segment(namespace)}/query", body).data
            if name in (page.get("unavailable") or []):
                return False
            found.update(_served_form(item.get("record") or {})
                         for item in page.get("items") or [])
            if not page.get("nextCursor"):
                break
            body["cursor"] = page["nextCursor"]
    return found == wanted


def _served_form(record: Mapping[str, Any]) -> str:
    """A record's fields of spec 1.7, compared as the service serves them (an empty field and
    a missing one alike)."""
    source = record.get("source") or {}
    return json.dumps({
        "id": record.get("id") or "", "context": record.get("context") or "",
        "type": record.get("type") or "", "revision": record.get("revision") or "",
        "title": record.get("title") or "", "text": record.get("text") or "",
        "keywords": list(record.get("keywords") or []), "file": record.get("file") or "",
        "source": {key: source.get(key) or "" for key in ("context", "type", "revision")},
    }, sort_keys=True, ensure_ascii=False)


def transfer(local: LocalContext, destination: str, revision: str, progress: bool) -> None:
    if not s3.is_s3(destination):
        volume.mirror(local, Path(destination), revision)
        return
    location = s3.Location.parse(destination)
    with progress_bar(progress) as bar:
        s3.push(location, local.root, local.type, revision, lambda total: _advance(
            bar, total, "sending the bundle"))


def _advance(bar: Any, total: int | None, description: str = "uploading") -> Any:
    task = bar.add_task(description, total=total)
    return lambda n: bar.advance(task, n)


def _print(report: dict[str, Any]) -> None:
    revision = str(report["revision"])[:12]
    where = (f"copied to {report['transferred']}" if report["transferred"] else "no files copied")
    output.line(f"pushed {report['local']} to {report['namespace']}/{report['context']}: "
                f"revision {revision} ({report['files']} files, {report['bytes']} bytes), "
                f"{where}")
    output.line("revision published" if report["revisionPublished"] else
                "revision already current on the service")
    index = report["index"]
    if index is None:
        if report["type"] == "memory":
            output.line("no index: memory/MEMORY.md does not exist (queries list the context "
                        "as unavailable)")
        elif report["type"] == "knowledge":
            output.line("no index: knowledge/records.jsonl does not exist (queries list the "
                        "context as unavailable)")
        return
    output.line(f"index of {index['records']} records published" if index["published"] else
                f"index of {index['records']} records already current")

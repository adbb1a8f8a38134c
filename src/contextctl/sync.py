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
from context_service.contextctl import pull as pulling
from context_service.contextctl.client import Client, CommandError, context_path, segment
from context_service.contextctl.contexts import context_argument
from context_service.contextctl.index import progress_bar
from context_service.contextctl.ingestion import service
from context_service.contextctl.local import (
    LocalContext,
    LocalStore,
    LocalStoreError,
    content_of,
)
from context_service.contextctl.local.errors import FilesChanged
from context_service.contextctl.local.records import INDEXED_TYPES
from context_service.contextctl.local.store import NAME_MESSAGE, is_context_name
from context_service.contextctl.local_commands import key_values, store_group, totals
from context_service.contextctl.options import App, namespace_option, pass_app
from context_service.contextctl.upload import MAX_BODY

OPERATION = "sync"
PRODUCER = "contextctl"
QUERY_LIMIT = 100  # the service's largest query page (spec 2.9)

sync = store_group("sync", "Move contexts between the local store (CS_CONTEXT_HOME) and the "
                   "service.")
sync.short_help = "Move contexts between the local store and the service."


@sync.command(name="push", short_help="Push a local context to the service's context of that name.",
              help="Push a context of the local store to the named context of the "
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
    if destination is not None:
        s3.check(destination)
    ns = app.namespace(namespace)
    local = LocalStore.from_environment().open(local_name or name)
    remote: dict[str, Any] = app.client.get(context_path(ns, name)).data
    if remote.get("type") != local.type:
        raise CommandError(f"{name} is a {remote.get('type')} context and the local "
                           f"{local.name} a {local.type} one: a push keeps its type")
    revision = local.content().revision
    records = local.records(revision) if local.type in INDEXED_TYPES else None
    sender = (None if records is None else
              service.index_sender(ns, name, revision, records, part_size))
    if destination is not None:
        transfer(local, destination, revision, progress)
    # recorded in the local store only once the files arrived, and only as they were sent
    try:
        entry, recorded = local.publish(OPERATION, producer, parameters, expected=revision)
    except FilesChanged:
        raise CommandError(f"the files of {local.name} changed during the push: push "
                           "again") from None
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


@sync.command(name="pull", short_help="Pull a context's current revision into the local store.",
              help="Pull the named context's current revision into the local "
              "context of the same name (created when absent): its files from the directory "
              "where its volume is mounted or from the S3 bundle of that revision, staged in "
              "the local store, addressed and swapped in; the previous files are kept as a "
              "protected pre-pull snapshot and the revision recorded (operation sync).")
@context_argument
@click.option("--from", "source", required=True, metavar="DIR|s3://BUCKET/PREFIX",
              help="Where the files are: the directory where the context's volume is mounted, "
              "or the S3 prefix pushed to (the bundle of the service's current revision is "
              "read, whatever PREFIX/current names).")
@click.option("--local", "local_name", default=None, metavar="NAME",
              help="The local context to pull into (default: the same name).")
@click.option("--force", is_flag=True, help="Replace files not captured as a revision (they are "
              "kept as a protected pre-pull snapshot).")
@click.option("--progress/--no-progress", default=True, show_default=True,
              help="A progress bar on a terminal.")
@click.option("--json", "as_json", is_flag=True, help="Print what was done as JSON.")
@namespace_option
@pass_app
def pull(app: App, name: str, source: str, local_name: str | None, force: bool,
         progress: bool, as_json: bool, namespace: str | None) -> None:
    if not source.strip():  # an unset variable must not make the working directory the volume
        raise click.BadParameter("--from must name a directory or s3://BUCKET/PREFIX",
                                 param_hint="--from")
    s3.check(source)
    target = local_name or name
    if not is_context_name(target):  # before anything is fetched, and never a path
        raise LocalStoreError(NAME_MESSAGE)
    ns = app.namespace(namespace)
    remote: dict[str, Any] = app.client.get(context_path(ns, name)).data
    revision, kind = str(remote.get("currentRevision") or ""), str(remote.get("type"))
    if not revision:
        raise CommandError(f"{ns}/{name} has no published revision: there is nothing to pull")
    store = LocalStore.from_environment()
    local = store.open(target) if store.exists(target) else None
    if local is None and not force:
        _check_unregistered(store.home / target, kind)
    report = {"context": name, "namespace": ns, "type": kind, "local": target,
              "revision": revision, "transferred": source, "created": local is None}
    if local is not None and _check_local(local, name, kind, revision, force):
        entry = local.history()[-1]
        output.emit_data({**report, "files": entry.get("files", 0),
                          "bytes": entry.get("bytes", 0), "recorded": False, "changed": False,
                          "safetySnapshot": None},
                         output.JSON if as_json else output.TEXT, _print_pull)
        return
    posted = _entry(app.client, ns, name, revision)
    provenance = _provenance(posted)
    with store.staging(target) as staging:
        with progress_bar(progress) as bar:
            files = pulling.stage(source, staging, kind, revision, lambda total: _advance(
                bar, total, "receiving the bundle"), pulling.Declared.of(posted))
        local = local or store.create(target, kind)
        done = local.pull(files, revision, force=force, **provenance)
    entry = done["revision"]
    report.update({"files": entry.get("files", 0), "bytes": entry.get("bytes", 0),
                   "recorded": done["recorded"], "changed": True,
                   "safetySnapshot": done["safetySnapshot"]})
    output.emit_data(report, output.JSON if as_json else output.TEXT, _print_pull)


def _check_local(local: LocalContext, name: str, kind: str, revision: str, force: bool) -> bool:
    """Whether the local context holds ``revision`` already (its files and its current
    revision); the refusals known before anything is fetched (the pull checks again, locked)."""
    if local.type != kind:
        raise CommandError(f"{name} is a {kind} context and the local {local.name} a "
                           f"{local.type} one: a pull keeps its type")
    content = local.content()
    if content.revision == revision == local.current_revision():
        return True
    if not force and content.revision != revision and local.uncaptured(content):
        raise CommandError(f"{local.name} has files not captured as a revision: capture them, "
                           "or pull with --force to keep them as a protected snapshot")
    return False


def _check_unregistered(root: Path, kind: str) -> None:
    """A directory of the home that is no local context yet but holds files: the pull would
    make it one and replace them, so it needs ``--force`` as uncaptured work does (refused
    before anything is fetched or created)."""
    if content_of(root, kind).files:
        raise CommandError(f"{root} holds files but is no local context: pull with --force to "
                           "keep them as a protected snapshot, or make it one (local init) and "
                           "capture them first")


def _entry(client: Client, namespace: str, name: str, revision: str) -> dict[str, Any] | None:
    """The service's last history entry for ``revision`` (normally there: a current revision
    was posted)."""
    items = client.get(context_path(namespace, name, "revisions")).data.get("items") or []
    return next((e for e in reversed(items) if e.get("id") == revision), None)


def _provenance(entry: dict[str, Any] | None) -> dict[str, Any]:
    """The producer, parameters and sources of the pulled revision's entry (contextctl's when
    the service has none)."""
    if entry is None:
        return {"producer": PRODUCER}
    return {"producer": str(entry.get("producer") or ""),
            "parameters": dict(entry.get("parameters") or {}),
            "sources": list(entry.get("sources") or [])}


def _print_pull(report: dict[str, Any]) -> None:
    revision = str(report["revision"])[:12]
    where = f"{report['namespace']}/{report['context']}"
    if not report["changed"]:
        output.line(f"{report['local']} already holds revision {revision} of {where}: nothing "
                    "changed")
        return
    output.line(f"pulled {where} into {report['local']}: revision {revision} "
                f"({totals(report['files'], report['bytes'])}) from {report['transferred']}")
    if report["safetySnapshot"]:
        output.line(f"the previous files are in snapshot {report['safetySnapshot']}")


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
                f"revision {revision} ({totals(report['files'], report['bytes'])}), "
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
    records = f"{index['records']} record{'' if index['records'] == 1 else 's'}"
    output.line(f"index of {records} published" if index["published"] else
                f"index of {records} already current")

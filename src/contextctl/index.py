"""``index push``: publish a ``records.jsonl`` file as the query index of a memory or knowledge
context, in one request or in parts when it is larger, with a progress bar for reading and
uploading."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO, Any

import click
from rich.progress import (
    BarColumn,
    DownloadColumn,
    Progress,
    TaskProgressColumn,
    TextColumn,
    TransferSpeedColumn,
)

from context_service.contextctl import output
from context_service.contextctl.client import CommandError, context_path
from context_service.contextctl.contexts import context_argument
from context_service.contextctl.local.records import record_line
from context_service.contextctl.options import App, group, namespace_option, pass_app
from context_service.contextctl.upload import MAX_BODY, IndexUpload, sender_for
from context_service.terminal import draws_bars

group_ = group("index", "Query indexes of memory and knowledge contexts.")


@contextmanager
def progress_bar(show: bool) -> Iterator[Progress]:
    columns = (TextColumn("{task.description}"), BarColumn(), TaskProgressColumn(),
               DownloadColumn(), TransferSpeedColumn())
    err = output.console(stderr=True)
    with Progress(*columns, console=err, disable=not (show and draws_bars(err))) as bar:
        yield bar


def read_records(stream: IO[bytes], context: dict[str, Any], revision: str,
                 advance: Any) -> list[bytes]:
    """One record per non-empty line; ``context``, ``type`` and ``revision`` are filled in
    where a record leaves them out."""
    identity = {"context": context.get("name"), "type": context.get("type"),
                "revision": revision}
    records: list[bytes] = []
    for number, raw in enumerate(stream, start=1):
        advance(len(raw))
        record = record_line(number, raw, identity)
        if record is not None:
            records.append(json.dumps(record, separators=(",", ":"),
                                      ensure_ascii=False).encode())
    return records


def file_size(stream: IO[bytes]) -> int | None:
    try:
        return os.fstat(stream.fileno()).st_size or None
    except (OSError, ValueError):
        return None


@group_.command(short_help="Publish records.jsonl as the context's query index.",
                help="Publish records.jsonl (- for standard input) as the context's index for "
                "its current revision; it replaces the previous index. An index larger than "
                "one request is sent in parts and becomes current when the last part arrives; "
                "until then, or if the upload stops, the previous index stays current.")
@context_argument
@click.argument("file", type=click.File("rb"))
@click.option("--revision", default=None, metavar="ID",
              help="The revision the records belong to (default: the current revision).")
@click.option("--part-size", type=click.IntRange(4096, MAX_BODY), default=None, metavar="BYTES",
              help="The largest request body to send, for a proxy with a smaller limit than "
              f"the service's {MAX_BODY:,} bytes (default: one body up to that limit, else "
              "parts of 512 KiB).")
@click.option("--progress/--no-progress", default=True, show_default=True,
              help="Progress bars on a terminal.")
@namespace_option
@pass_app
def push(app: App, name: str, file: IO[bytes], revision: str | None, part_size: int | None,
         progress: bool, namespace: str | None) -> None:
    ns = app.namespace(namespace)
    context = app.client.get(context_path(ns, name)).data
    chosen = revision or context.get("currentRevision") or ""
    if not chosen:
        raise CommandError(f"{name} has no current revision: publish one first "
                           "(contextctl ctx publish) or pass --revision")
    with progress_bar(progress) as bar:
        reading = bar.add_task(f"reading {getattr(file, 'name', 'records')}",
                               total=file_size(file))
        records = read_records(file, context, chosen, lambda n: bar.advance(reading, n))
        upload = IndexUpload(ns, name, chosen, records)
        sender = sender_for(upload, part_size)
        sending = bar.add_task("uploading", total=sender.total())
        sender.send(app.client, lambda n: bar.advance(sending, n))
    output.line(f"published {len(records)} records for revision {chosen[:12]} to {name}")

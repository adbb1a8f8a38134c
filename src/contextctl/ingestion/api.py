"""``ingest``: files and folders to a published, content-addressed query index, as one call.
Everything is read, parsed and split before anything is sent; nothing is published unless every
file could be read (or ``skip_bad`` sets the others aside). The command ``contextctl ingest``
calls this function; scripts may call it directly."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from context_service.contextctl.client import Client, CommandError, ServiceError, printable
from context_service.contextctl.ingestion import revision as revisions
from context_service.contextctl.ingestion import service
from context_service.contextctl.ingestion.discovery import discover
from context_service.contextctl.ingestion.passages import Passage
from context_service.contextctl.ingestion.reading import Read, Skipped, read
from context_service.contextctl.ingestion.report import (
    DRY_RUN,
    INDEXED,
    PUBLISHED,
    UNCHANGED,
    IngestReport,
)
from context_service.contextctl.ingestion.tokens import TOKENIZER_NAME, counter
from context_service.contextctl.local.records import INDEXED_TYPES
from context_service.contextctl.settings import Settings
from context_service.contextctl.upload import Sender

DEFAULT_MAX_TOKENS = 256
MIN_TOKENS, MAX_TOKENS = 32, 8000


class IngestFailed(CommandError):
    """Some files cannot be ingested and ``skip_bad`` was not given: nothing was published."""

    def __init__(self, failed: list[Skipped], total: int) -> None:
        self.failed = failed
        head = ("the file cannot be ingested; nothing was published:" if total == 1 else
                f"none of the {total} files can be ingested; nothing was published:"
                if len(failed) == total else
                f"{len(failed)} of {total} files cannot be ingested; nothing was published "
                "(--skip-bad publishes the others):")
        # a name is another user's free text: a line break or escape in it is shown escaped,
        # never starting a line of its own or reaching the terminal
        lines = [head, *(f"  {printable(s.file)}: {printable(s.reason)}" for s in failed)]
        super().__init__("\n".join(lines))


class Progress(Protocol):
    def task(self, description: str, total: int | None) -> Callable[[int], None]:
        """A new task; the function advances it by a number of bytes."""
        ...


class NoProgress:
    def task(self, description: str, total: int | None) -> Callable[[int], None]:
        return lambda _: None


def parameters(max_tokens: int) -> dict[str, str]:
    """The chunking parameters: part of the revision id and of its provenance."""
    return {"chunker": revisions.CHUNKER, "maxTokens": str(max_tokens),
            "tokenizer": TOKENIZER_NAME}


def record(passage: Passage, context: str, context_type: str, revision: str) -> dict[str, Any]:
    made: dict[str, Any] = {"id": passage.id, "context": context, "type": context_type,
                            "revision": revision, "title": passage.title, "text": passage.text,
                            "file": passage.file}
    if passage.valid_from:
        made["validFrom"] = passage.valid_from
    return made


def ingest(paths: Sequence[str | os.PathLike[str]], *, context: str,
           namespace: str | None = None, context_type: str | None = None,
           max_tokens: int = DEFAULT_MAX_TOKENS, create: bool = False, skip_bad: bool = False,
           dry_run: bool = False, part_size: int | None = None, client: Client | None = None,
           settings: Settings | None = None, progress: Progress | None = None) -> IngestReport:
    """Ingest ``paths`` (files and folders) into the memory or knowledge context ``context``.

    ``client`` (else one made from ``settings``, else from the ``CS_*`` environment) talks to
    the service; ``dry_run`` sends nothing. Raises ``IngestFailed`` when files cannot be read
    and ``skip_bad`` is false, ``CommandError`` (``ServiceError``) when the service refuses."""
    if not MIN_TOKENS <= max_tokens <= MAX_TOKENS:
        raise CommandError(f"max_tokens must be between {MIN_TOKENS} and {MAX_TOKENS}")
    if context_type is not None and context_type not in INDEXED_TYPES:
        raise CommandError("the context type must be knowledge or memory")
    progress = progress or NoProgress()
    found = discover(paths)
    total = sum(s.size for s in found.sources)  # each file moves the bar by its own share
    got = read(found, counter(), max_tokens, progress.task("reading", total or None))
    if got.failed and (not skip_bad or not got.passages):
        raise IngestFailed(got.failed, len(got.failed) + len(got.entries))
    if not got.passages:
        raise CommandError("nothing to ingest: no file of a supported format gave any text")
    chosen = settings or Settings.from_env()
    ns = namespace or chosen.namespace
    if dry_run:
        return _report(got, context, ns, context_type or service.DEFAULT_TYPE, max_tokens,
                       DRY_RUN, records=True)
    own = client is None
    http = service.PositionClient(client or Client(chosen, user_agent="contextctl"))
    try:
        return _publish(http, got, context, ns, context_type, max_tokens, create, part_size,
                        progress, chosen.storage_class)
    finally:
        if own:
            http.close()


def _publish(http: service.PositionClient, got: Read, context: str, ns: str,
             wanted: str | None, max_tokens: int, create: bool, part_size: int | None,
             progress: Progress, storage_class: str) -> IngestReport:
    # a record too large for any part is refused before a revision is published (which would
    # leave the context's queries without an index) and before a context is created
    senders: dict[str, Sender] = {}

    def sender(kind: str) -> Sender:
        if kind not in senders:
            senders[kind] = _sender(got, context, ns, kind, max_tokens, part_size)
        return senders[kind]

    found, created = service.context_of(http, ns, context, wanted, create, storage_class,
                                        before_create=sender)
    kind = str(found["type"])
    report = _report(got, context, ns, kind, max_tokens, UNCHANGED, created=created)
    current = found.get("currentRevision") == report.revision
    if current and service.index_current(http, ns, context, got.passages[0].id):
        return report
    upload = sender(kind)
    if not current:
        body = revisions.provenance(report.revision, report.parameters, got.entries)
        service.publish_revision(http, ns, context, body)
    try:
        position = service.send_index(http, upload,
                                      lambda size: progress.task("uploading", size))
    except ServiceError as exc:
        # the upload's own words ("the previous index stays current") are true of the index,
        # not of the queries: the current revision is now this one, which that index lacks
        message = exc.message.removesuffix("; the previous index stays current")
        raise ServiceError(f"{message}\n{without_index(report.revision, context)}",
                           exc.details, exc.status) from exc
    except KeyboardInterrupt as exc:
        exc.add_note(without_index(report.revision, context))
        raise
    return _report(got, context, ns, kind, max_tokens, INDEXED if current else PUBLISHED,
                   created=created, position=position)


def without_index(revision: str, context: str) -> str:
    """What an upload that stopped leaves behind (the service ties an index to the current
    revision, so the revision is published first), and how to finish it."""
    return (f"revision {revision[:12]} is published without its index: queries report "
            f"{context} unavailable until the same command is run again, which sends it")


def _report(got: Read, context: str, ns: str, kind: str, max_tokens: int, outcome: str,
            created: bool = False, position: int | None = None,
            records: bool = False) -> IngestReport:
    chosen = parameters(max_tokens)
    revision = revisions.digest(kind, chosen, got.entries)
    return IngestReport(
        context=context, namespace=ns, type=kind, outcome=outcome, revision=revision,
        files=len(got.entries), bytes=sum(e.size for e in got.entries),
        passages=len(got.passages), tokens=sum(p.tokens for p in got.passages),
        parameters=chosen, position=position, created=created, skipped=list(got.failed),
        ignored=list(got.ignored), notes=list(got.notes),
        records=[record(p, context, kind, revision) for p in got.passages] if records else [],
        record_tokens=[p.tokens for p in got.passages] if records else [])


def _sender(got: Read, context: str, ns: str, kind: str, max_tokens: int,
            part_size: int | None) -> Sender:
    revision = revisions.digest(kind, parameters(max_tokens), got.entries)
    records = [record(p, context, kind, revision) for p in got.passages]
    return service.index_sender(ns, context, revision, records, part_size)


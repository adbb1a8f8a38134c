"""``ingest``: files and folders (Markdown, plain text, HTML, PDF, chat transcripts) to a
memory or knowledge context's published query index, with progress bars, a summary, ``--json``
for scripts and ``--dry-run`` to see the passages first (docs/ingestion.md)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click
from rich.progress import Progress

from context_service.contextctl import output
from context_service.contextctl.client import printable
from context_service.contextctl.index import progress_bar
from context_service.contextctl.ingestion import DEFAULT_MAX_TOKENS, IngestReport, ingest
from context_service.contextctl.ingestion.api import MAX_TOKENS, MIN_TOKENS
from context_service.contextctl.ingestion.report import DRY_RUN, INDEXED, UNCHANGED
from context_service.contextctl.options import App, namespace_option, pass_app
from context_service.contextctl.packs import preview
from context_service.contextctl.upload import MAX_BODY


class _Bars:
    def __init__(self, bar: Progress) -> None:
        self.bar = bar

    def task(self, description: str, total: int | None) -> Callable[[int], None]:
        task = self.bar.add_task(description, total=total)
        return lambda n: self.bar.advance(task, n)


@click.command(name="ingest", help="Turn files and folders (Markdown, text, HTML, PDF, chat "
               "transcripts in JSON or JSON Lines, LoCoMo samples, ChatGPT's and Claude.ai's "
               "conversations.json exports) into passages and publish them as the query "
               "index of a memory or knowledge context, under a revision addressed by the "
               "files' content. Nothing is published unless every file could be read (or "
               "--skip-bad); ingesting the same files again records nothing.",
               short_help="Publish files and folders as a context's index.")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=str))
@click.option("--context", "context", required=True, metavar="NAME",
              help="The memory or knowledge context to publish to.")
@namespace_option
@click.option("--type", "context_type", type=click.Choice(("knowledge", "memory")), default=None,
              help="The context's type: checked against an existing context, given to one "
              "--create makes (default knowledge).")
@click.option("--create", is_flag=True, help="Create the context when it does not exist.")
@click.option("--max-tokens", type=click.IntRange(MIN_TOKENS, MAX_TOKENS),
              default=DEFAULT_MAX_TOKENS, show_default=True, metavar="N",
              help="The most tokens of one passage.")
@click.option("--skip-bad", is_flag=True, help="Publish what could be read and list the files "
              "that could not, instead of publishing nothing.")
@click.option("--dry-run", is_flag=True, help="Print the passages that would be published; "
              "send nothing.")
@click.option("--part-size", type=click.IntRange(4096, MAX_BODY), default=None, metavar="BYTES",
              help="The largest request body to send (as index push).")
@click.option("--progress/--no-progress", default=True, show_default=True,
              help="Progress bars on a terminal.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@pass_app
def ingest_command(app: App, paths: tuple[str, ...], context: str, namespace: str | None,
                   context_type: str | None, create: bool, max_tokens: int, skip_bad: bool,
                   dry_run: bool, part_size: int | None, progress: bool, as_json: bool) -> None:
    try:
        # a dry run reads and cuts every file too: that is where a large one takes its time
        with progress_bar(progress) as bar:
            report = ingest(paths, context=context, namespace=app.namespace(namespace),
                            context_type=context_type, max_tokens=max_tokens, create=create,
                            skip_bad=skip_bad, dry_run=dry_run, part_size=part_size,
                            client=None if dry_run else app.client, settings=app.settings,
                            progress=_Bars(bar))
    except KeyboardInterrupt as exc:  # interrupted mid-upload: what is left, how to finish
        for note in getattr(exc, "__notes__", ()):
            output.note(note)
        raise
    if as_json:
        output.dump(report.as_json(), output.JSON)
    else:
        print_report(report)


def print_report(report: IngestReport) -> None:
    if report.outcome == DRY_RUN:
        output.table(["ID", "TOKENS", "TITLE", "TEXT"], [
            [r["id"], tokens, r.get("title"), preview(r["text"])]
            for r, tokens in zip(report.records, report.record_tokens, strict=True)], "")
        output.line()
    pairs: list[tuple[str, object]] = [
        ("Context", f"{report.namespace}/{report.context} ({report.type}"
                    + (", created" if report.created else "") + ")"),
        ("Files", f"{report.files} ({report.bytes:,} bytes)"),
        ("Passages", report.passages), ("Tokens", f"{report.tokens:,}"),
        ("Revision", report.revision)]
    if report.position is not None:
        pairs.append(("Position", report.position))
    output.block(_headline(report), pairs)
    _files("Skipped (cannot be read)", [[s.file, s.reason] for s in report.skipped])
    if report.ignored:
        output.note(f"ignored {len(report.ignored)} file(s) that are not documents or transcripts: "
                    + ", ".join(map(printable, report.ignored[:5]))
                    + (", …" if len(report.ignored) > 5 else ""))
    # what an ingested file held that no passage shows (a chat export's parts that are not
    # text, a message whose parent is missing): a line each, never dropped without a word
    for note in report.notes:
        output.note(f"{printable(note.file)}: {printable(note.note)}")


def _headline(report: IngestReport) -> str:
    if report.outcome == DRY_RUN:
        return "Would publish (dry run: nothing was sent)"
    if report.outcome == UNCHANGED:
        return "Nothing to record: the context is at this revision with its index"
    if report.outcome == INDEXED:
        return "Published the index of the current revision"
    return "Published a new revision and its index"


def _files(title: str, rows: list[list[Any]]) -> None:
    output.section(title, ["FILE", "REASON"], rows)

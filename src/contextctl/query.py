"""``query``: search the memory and knowledge records you can read, by text or by ids."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

import click

from context_service.contextctl import output
from context_service.contextctl.client import (
    CommandError,
    ServiceError,
    context_path,
    segment,
    unseen,
)
from context_service.contextctl.options import App, F, namespace_option, output_options, pass_app

SNIPPET = 80
STALE = "index does not match the current revision"
NO_REVISION = "no revision published yet; publish one with contextctl ingest PATH... --context NAME"


def snippet(record: dict[str, Any]) -> str:
    text = str(record.get("title") or record.get("text") or "").replace("\n", " ")
    return text if len(text) <= SNIPPET else text[: SNIPPET - 1] + "…"


def print_results(data: dict[str, Any], without_revision: Collection[str] = ()) -> None:
    """The results, then the contexts that could not be searched under their reason: the
    service names them without one (spec 5.3), so ``without_revision`` says which of them have
    no revision at all, for which "does not match" would send the reader looking for a stale
    index that was never there."""
    output.table(["SCORE", "CONTEXT", "ID", "TITLE"], [
        [r.get("score"), (r.get("record") or {}).get("context"), (r.get("record") or {}).get("id"),
         snippet(r.get("record") or {})] for r in data.get("items", [])],
        "No records found.")
    unavailable = [str(name) for name in data.get("unavailable") or []]
    for reason, names in ((NO_REVISION, [n for n in unavailable if n in without_revision]),
                          (STALE, [n for n in unavailable if n not in without_revision])):
        if names:
            output.note(f"unavailable ({reason}): {', '.join(names)}")
    if data.get("nextCursor"):
        output.note(f"more results: --cursor {data['nextCursor']} (or --all)")


def query_arguments(func: F) -> F:
    """The query text and the record filters (spec 2.4), shared by ``query`` and
    ``local query``; passes ``text``, ``ids``, ``contexts``, ``types``, ``source_contexts``
    and ``revisions``."""
    for option in reversed((
            click.argument("text", required=False),
            click.option("--id", "ids", multiple=True, metavar="ID",
                         help="Exact record id (repeatable)."),
            click.option("--context", "contexts", multiple=True, metavar="NAME",
                         help="Only these contexts (repeatable)."),
            click.option("--type", "types", multiple=True,
                         type=click.Choice(["memory", "knowledge"]),
                         help="Only records of this type (repeatable)."),
            click.option("--source-context", "source_contexts", multiple=True, metavar="NAME",
                         help="Only records derived from this context (repeatable)."),
            click.option("--revision", "revisions", multiple=True, metavar="ID",
                         help="Only records of this revision (repeatable)."))):
        func = option(func)
    return func


def without_revision(app: App, namespace: str, fmt: str, data: Any) -> list[str]:
    """Which of the unavailable contexts have no current revision, asked only for the text a
    person reads (``--json`` keeps the service's answer as it is). A context that cannot be
    read here keeps the service's general reason. A service that fails one GET (no answer in
    time, a 5xx) ends the asking: each of the rest would wait as long, for a note's wording;
    one context refused on its own (a 4xx: gone meanwhile, not readable) does not."""
    names = data.get("unavailable") if fmt == output.TEXT and isinstance(data, dict) else None
    found = []
    for name in names or []:
        try:
            context = app.client.get(context_path(namespace, str(name))).document()
        except ServiceError as exc:
            if 400 <= exc.status < 500:
                continue
            break
        except CommandError:
            continue
        if not context.get("currentRevision"):
            found.append(str(name))
    return found


@click.command(short_help="Query memory and knowledge records.",
               help='Query memory and knowledge: contextctl query "release schedule".')
@query_arguments
@click.option("--limit", type=click.IntRange(1, 100), default=None,
              help="Results per page (1-100, service default 20).")
@click.option("--cursor", default=None, help="Continue from a previous page's nextCursor.")
@click.option("--all", "every", is_flag=True, help="Follow cursors to the last page.")
@namespace_option
@output_options
@pass_app
def query(app: App, text: str | None, ids: tuple[str, ...], contexts: tuple[str, ...],
          types: tuple[str, ...], source_contexts: tuple[str, ...], revisions: tuple[str, ...],
          limit: int | None, cursor: str | None, every: bool, namespace: str | None,
          fmt: str) -> None:
    if not (text and text.strip()) and not ids:
        raise click.UsageError("query text or --id is required")
    body: dict[str, Any] = {}
    for key, values in (("contexts", contexts), ("types", types),
                        ("sourceContexts", source_contexts), ("revisions", revisions),
                        ("ids", ids)):
        if values:
            body[key] = list(values)
    if text:
        body["query"] = text
    if limit is not None:
        body["limit"] = limit
    if cursor:
        body["cursor"] = cursor
    path = f"/v1/namespaces/{segment(app.namespace(namespace))}/query"
    reply = app.client.post(path, body)
    if not every:
        output.emit(reply, fmt, lambda data: print_results(
            data, without_revision(app, app.namespace(namespace), fmt, data)))
        return
    page = reply.listing()
    merged: dict[str, Any] = {"items": list(page["items"])}
    if page.get("unavailable"):
        merged["unavailable"] = page["unavailable"]
    followed = {cursor} if cursor else set()
    while (following := unseen(page.get("nextCursor"), followed, "results")) is not None:
        page = app.client.post(path, {**body, "cursor": following}).listing()
        merged["items"].extend(page["items"])
    output.emit_data(merged, fmt, lambda data: print_results(
        data, without_revision(app, app.namespace(namespace), fmt, data)))

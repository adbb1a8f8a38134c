"""``history``: a context as of a past point, its audit trail, every event of it, and an export
of those events as JSON lines."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from typing import IO, Any

import click

from context_service.contextctl import output
from context_service.contextctl.client import Client, context_path, unseen
from context_service.contextctl.contexts import (
    as_of_options,
    as_of_params,
    context_argument,
    emit_context,
    emit_list,
)
from context_service.contextctl.options import (
    App,
    group,
    namespace_option,
    output_options,
    pass_app,
)
from context_service.files import Replacing

EXPORT_PAGE = 1000
history = group("history", "A context's past: as-of reads, audit, events, export.")


@history.command(help="Show a context as it was: --as-of TIME or --as-of-position N.")
@context_argument
@as_of_options
@namespace_option
@output_options
@pass_app
def show(app: App, name: str, as_of: str | None, as_of_position: int | None,
         namespace: str | None, fmt: str) -> None:
    params = as_of_params(as_of, as_of_position)
    if not params:
        raise click.UsageError("--as-of or --as-of-position is required")
    emit_context(app.client.get(context_path(app.namespace(namespace), name), params), fmt)


def every_page(client: Client, path: str, params: dict[str, str]) -> dict[str, Any]:
    """Every page from ``params`` on, merged into one ``items`` list."""
    merged: dict[str, Any] = {"items": []}
    for page in pages(client, path, params):
        merged["items"].extend(page["items"])
    return merged


def pages(client: Client, path: str, params: dict[str, str]) -> Iterator[dict[str, Any]]:
    """The pages from ``params`` on, following ``nextCursor`` (never one twice: ``unseen``)."""
    followed = {params["cursor"]} if params.get("cursor") else set()
    while True:
        page = client.get(path, params).listing()
        yield page
        cursor = unseen(page.get("nextCursor"), followed, "events")
        if cursor is None:
            return
        params = {**params, "cursor": cursor}


def paging_options(func: Any) -> Any:
    func = click.option("--all", "every", is_flag=True, help="Follow cursors to the end.")(func)
    func = click.option("--cursor", default=None, help="A previous page's nextCursor.")(func)
    return click.option("--limit", type=click.IntRange(1, 1000), default=None,
                        help="Events per page (1-1000).")(func)


def print_audit(data: dict[str, Any]) -> None:
    output.table(["TIME", "ACTION", "SUBJECT", "TARGET"], [
        [e.get("time"), e.get("action"), output.subject(e.get("subject")),
         output.subject(e.get("target")) if e.get("target") else ""]
        for e in data.get("items", [])], "No audit events.")
    if data.get("nextCursor"):
        output.note(f"more events: --cursor {data['nextCursor']} (or --all)")


def print_events(data: dict[str, Any]) -> None:
    output.table(["POSITION", "TIME", "EVENT", "ACTOR"], [
        [e.get("position"), e.get("time"), e.get("name"), e.get("actor")]
        for e in data.get("items", [])], "No events.")
    if data.get("nextCursor"):
        output.note(f"more events: --cursor {data['nextCursor']} (or --all)")


def _listing(app: App, suffix: str, name: str, namespace: str | None, limit: int | None,
             cursor: str | None, every: bool, fmt: str, text: Any) -> None:
    path = context_path(app.namespace(namespace), name, suffix)
    params = {k: v for k, v in (("limit", str(limit) if limit else None),
                                ("cursor", cursor)) if v is not None}
    if every:
        output.emit_data(every_page(app.client, path, params), fmt, text)
    else:
        emit_list(app.client.get(path, params), fmt, text)


@history.command(help="The audit trail: grants, revocations, attachments (needs administer).")
@context_argument
@paging_options
@namespace_option
@output_options
@pass_app
def audit(app: App, name: str, limit: int | None, cursor: str | None, every: bool,
          namespace: str | None, fmt: str) -> None:
    _listing(app, "audit", name, namespace, limit, cursor, every, fmt, print_audit)


@history.command(help="Every event of the context in log order (needs administer).")
@context_argument
@paging_options
@namespace_option
@output_options
@pass_app
def events(app: App, name: str, limit: int | None, cursor: str | None, every: bool,
           namespace: str | None, fmt: str) -> None:
    _listing(app, "history", name, namespace, limit, cursor, every, fmt, print_events)


@history.command(help="Write every event of the context as JSON lines (to a file or stdout).")
@context_argument
@click.option("-f", "--file", "target", type=click.Path(dir_okay=False, writable=True),
              default=None, help="Where to write (default, or -: standard output).")
@namespace_option
@pass_app
def export(app: App, name: str, target: str | None, namespace: str | None) -> None:
    path = context_path(app.namespace(namespace), name, "history")
    if target is None or target == "-":
        write_events(app.client, path, sys.stdout)
        return
    count = write_whole(target, lambda stream: write_events(app.client, path, stream))
    output.note(f"exported {count} events of {name} to {target}")


def write_whole(target: str, write: Callable[[IO[str]], int]) -> int:
    """``write`` into ``target``, which it replaces only once complete (``files.Replacing``)."""
    try:
        replacing = Replacing(target)
    except OSError as exc:
        raise click.FileError(target, exc.strerror) from exc
    with replacing as stream:
        return write(stream)


def write_events(client: Client, path: str, stream: IO[str]) -> int:
    """Every page of the history route as JSON lines; the number of events written."""
    count = 0
    for page in pages(client, path, {"limit": str(EXPORT_PAGE)}):
        for item in page["items"]:
            stream.write(json.dumps(item, separators=(",", ":"), ensure_ascii=False) + "\n")
            count += 1
    return count

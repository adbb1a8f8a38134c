"""``history``: a context as of a past point, its audit trail, every event of it, and an export
of those events as JSON lines."""

from __future__ import annotations

import json
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import IO, Any

import click
import yaml
from rich.cells import cell_len
from rich.text import Text

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


@dataclass(frozen=True)
class Columns:
    """A listing as a table: its headers, an item's row, what an empty listing says."""

    headers: tuple[str, ...]
    row: Callable[[dict[str, Any]], list[object]]
    empty: str


AUDIT = Columns(("TIME", "ACTION", "SUBJECT", "TARGET"), lambda e: [
    e.get("time"), e.get("action"), output.subject(e.get("subject")),
    output.subject(e.get("target")) if e.get("target") else ""], "No audit events.")
EVENTS = Columns(("POSITION", "TIME", "EVENT", "ACTOR"), lambda e: [
    e.get("position"), e.get("time"), e.get("name"), e.get("actor")], "No events.")


def print_audit(data: dict[str, Any]) -> None:
    print_page(AUDIT, data)


def print_events(data: dict[str, Any]) -> None:
    print_page(EVENTS, data)


def print_page(columns: Columns, data: dict[str, Any]) -> None:
    output.table(columns.headers, [columns.row(e) for e in data.get("items", [])],
                 columns.empty)
    if data.get("nextCursor"):
        output.note(f"more events: --cursor {data['nextCursor']} (or --all)")


def _listing(app: App, columns: Columns, suffix: str, name: str, namespace: str | None,
             limit: int | None, cursor: str | None, every: bool, fmt: str) -> None:
    path = context_path(app.namespace(namespace), name, suffix)
    params = {k: v for k, v in (("limit", str(limit) if limit else None),
                                ("cursor", cursor)) if v is not None}
    if every:  # pages, never one answer as long as the whole history
        emit_every(pages(app.client, path, {"limit": str(EXPORT_PAGE), **params}), fmt,
                   columns)
    else:
        emit_list(app.client.get(path, params), fmt, lambda data: print_page(columns, data))


def emit_every(found: Iterator[dict[str, Any]], fmt: str, columns: Columns) -> None:
    """Every page's items as one listing, in the bytes ``output.emit_data`` writes for one
    object holding them all (``--all`` prints one object with every item), at a cost in memory
    of a page, not of the whole history."""
    items = (page["items"] for page in found)
    if fmt == output.JSON:
        _json_items(items)
    elif fmt == output.YAML:
        _yaml_items(items)
    else:
        _table_items(items, columns)


def _json_items(pages_items: Iterable[list[dict[str, Any]]]) -> None:
    """``{"items":[...]}`` written as the pages arrive (nothing before the first did: a refused
    request prints no start of a document)."""
    comma: str | None = None  # what goes before the next item; None: nothing written yet
    for items in pages_items:
        if comma is None:
            click.echo('{"items":[', nl=False)
            comma = ""
        if items:
            click.echo(comma + ",".join(json.dumps(i, separators=(",", ":"), ensure_ascii=False)
                                        for i in items), nl=False)
            comma = ","
    click.echo('{"items":[]}' if comma is None else "]}")


def _yaml_items(pages_items: Iterable[list[dict[str, Any]]]) -> None:
    """``items:`` then each page's items as the same block sequence, as the pages arrive."""
    started = False
    for items in pages_items:
        if items:
            if not started:
                click.echo("items:")
                started = True
            click.echo(yaml.safe_dump(items, sort_keys=False, allow_unicode=True), nl=False)
    if not started:
        click.echo("items: []")


def _table_items(pages_items: Iterable[list[dict[str, Any]]], columns: Columns) -> None:
    """The table of every item. Its columns are as wide as the table of them all would make
    them, which the last page may decide: the rows wait in a temporary file (not in memory)
    until every page has arrived, then are written a page at a time at those widths."""
    widest = [cell_len(h) for h in columns.headers]  # each column's widest cell
    longest = [_longest_word(h) for h in columns.headers]  # and its longest word
    rows = 0
    with tempfile.TemporaryFile("w+", encoding="utf-8") as spool:
        for items in pages_items:
            for item in items:
                cells = [output.cell_text(c) for c in columns.row(item)]
                widest = [max(w, cell_len(c)) for w, c in zip(widest, cells, strict=True)]
                longest = [max(w, _longest_word(c)) for w, c in zip(longest, cells, strict=True)]
                spool.write(json.dumps(cells) + "\n")
                rows += 1
        if not rows:
            output.line(columns.empty)
            return
        widths = _column_widths(columns.headers, widest, longest)
        spool.seek(0)
        for start in range(0, rows, EXPORT_PAGE):
            cells_read = [json.loads(spool.readline()) for _ in range(min(EXPORT_PAGE,
                                                                         rows - start))]
            _table_rows(columns.headers, widths, cells_read, header=start == 0)


def _longest_word(cell: str) -> int:
    """The narrowest a column holding ``cell`` can be made by wrapping it (as rich measures a
    cell: its longest word, or the cell's width where it has none)."""
    words = cell.split()
    return max(cell_len(w) for w in words) if words else cell_len(cell)


def _column_widths(headers: Sequence[str], widest: Sequence[int], longest: Sequence[int],
                   ) -> list[int]:
    """The widths the table of every item gets on this console: rich's own sizing of a table
    whose cells measure as the widest and the longest word of each column did. The widest cell
    alone, as each page's least width, made a row wider than a terminal: the columns past its
    width were cut to nothing, where the whole table wraps and shortens cells to fit."""
    grid = output.grid(headers)
    grid.add_row(*(Text("a" * w) for w in longest))  # the least each column can be
    grid.add_row(*(Text(("a " * w)[:w]) for w in widest))  # the most each column would take
    out = output.console()
    try:  # rich's own sizing, a private method: a release without it keeps the widest cells
        sized = grid._calculate_column_widths(out, out.options)
        return [w - grid._get_padding_width(i)  # a column's width: its cells'
                for i, w in enumerate(sized)]
    except (AttributeError, TypeError):
        return list(widest)


def _table_rows(headers: Sequence[str], widths: Sequence[int], rows: list[list[str]],
                header: bool) -> None:
    """Rows of the table ``output.table`` writes, its columns given their final widths (the
    same grid: a page of rows at those widths is those rows of the whole table)."""
    grid = output.grid(headers, header, widths)
    for row in rows:
        grid.add_row(*(Text(c) for c in row))
    output.print_grid(grid)


@history.command(help="The audit trail: grants, revocations, attachments (needs administer).")
@context_argument
@paging_options
@namespace_option
@output_options
@pass_app
def audit(app: App, name: str, limit: int | None, cursor: str | None, every: bool,
          namespace: str | None, fmt: str) -> None:
    _listing(app, AUDIT, "audit", name, namespace, limit, cursor, every, fmt)


@history.command(help="Every event of the context in log order (needs administer).")
@context_argument
@paging_options
@namespace_option
@output_options
@pass_app
def events(app: App, name: str, limit: int | None, cursor: str | None, every: bool,
           namespace: str | None, fmt: str) -> None:
    _listing(app, EVENTS, "history", name, namespace, limit, cursor, every, fmt)


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

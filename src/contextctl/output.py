"""Rendering: the service's JSON as is (``--json``), YAML (``-o yaml``), or text for people
(tables without borders, ``key: value`` blocks, one-line summaries)."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterable, Sequence
from decimal import Decimal
from typing import Any

import click
import yaml
from rich.console import Console
from rich.table import Table
from rich.text import Text

from context_service.contextctl.client import Reply, printable

TEXT, JSON, YAML = "text", "json", "yaml"
WIDE = 100_000  # no wrapping when the output is not a terminal: scripts read whole lines


def console(stderr: bool = False) -> Console:
    made = Console(file=sys.stderr if stderr else sys.stdout, markup=False, highlight=False,
                   emoji=False)
    if not made.is_terminal:
        made.width = WIDE
        made.soft_wrap = True
    return made


def line(text: str = "") -> None:
    click.echo(text)


def note(text: str) -> None:
    """Something for the person at the terminal (stderr: never mixed into parsed output)."""
    click.echo(text, err=True)


def dump(data: Any, fmt: str) -> None:
    if fmt == YAML:
        click.echo(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), nl=False)
    else:
        click.echo(json.dumps(data, separators=(",", ":"), ensure_ascii=False))


def emit(reply: Reply, fmt: str, text: Callable[[Any], None]) -> None:
    """``--json`` prints the body exactly as the service sent it (once it is known to be JSON:
    another server's page is an error, not output)."""
    if fmt == JSON:
        _ = reply.data
        click.echo(reply.raw.decode())
    elif fmt == YAML:
        dump(reply.data, YAML)
    else:
        text(reply.data)


def emit_data(data: Any, fmt: str, text: Callable[[Any], None]) -> None:
    """For answers assembled from several responses (``--all``)."""
    if fmt == TEXT:
        text(data)
    else:
        dump(data, fmt)


def table(headers: Sequence[str], rows: Iterable[Sequence[object]], empty: str,
          indent: str = "") -> None:
    cells = [[cell_text(c) for c in row] for row in rows]
    if not cells:
        if empty:
            line(indent + empty)
        return
    drawn = grid(headers)
    for row in cells:
        drawn.add_row(*(Text(c) for c in row))
    print_grid(drawn, indent)


def grid(headers: Sequence[str], show_header: bool = True,
         widths: Sequence[int] | None = None) -> Table:
    """The grid every table is drawn in, without rows; its columns ``widths`` wide where given
    (a table written a page at a time keeps the widths of the whole)."""
    out = console()
    drawn = Table(box=None, pad_edge=False, show_edge=False, padding=(0, 3, 0, 0),
                  header_style="bold" if out.is_terminal else "", show_header=show_header)
    for i, header in enumerate(headers):
        drawn.add_column(header, no_wrap=not out.is_terminal,
                         width=None if widths is None else widths[i])
    return drawn


def print_grid(drawn: Table, indent: str = "") -> None:
    """A grid's lines, each without trailing blanks."""
    out = console()
    with out.capture() as captured:
        out.print(drawn)
    for text in captured.get().splitlines():
        line((indent + text).rstrip())


def section(title: str, headers: Sequence[str], rows: Sequence[Sequence[object]]) -> None:
    """A titled, indented table after a block; nothing at all when there are no rows."""
    if rows:
        line()
        line(title + ":")
        table(headers, rows, "", indent="  ")


def block(title: str, pairs: Sequence[tuple[str, object]]) -> None:
    """``Title`` then indented ``Key:  value`` lines, values aligned."""
    line(title)
    width = max(len(k) for k, _ in pairs) + 2
    for key, value in pairs:
        line(f"  {(key + ':').ljust(width)}{cell_text(value)}".rstrip())


def cell_text(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        # as the service wrote it: a plain decimal (0.000001, never 1e-06)
        return format(Decimal(repr(value)), "f")
    if isinstance(value, list | tuple):
        return ",".join(cell_text(v) for v in value)
    # a free string (a consumer's or a grantee's name) set by another caller: shown, never
    # acted on by the terminal, and never splitting its row
    return printable(str(value))


def subject(value: Any) -> str:
    """``{"kind","name"}`` as ``kind:name``."""
    if not isinstance(value, dict):
        return ""
    return f"{value.get('kind', '')}:{value.get('name', '')}"

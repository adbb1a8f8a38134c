"""``agent lookup`` and ``agent match``: definitions by term and verified answers by question,
read with the agent credential in ``CS_AGENT_TOKEN`` from the sets it may see."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from context_service.contextctl import output
from context_service.contextctl.context_sets import AGENT
from context_service.contextctl.options import App, F, output_options, pass_app


def search_options(func: F) -> F:
    """``--set ID`` and ``--limit N`` (1 to 50, the service's default 5)."""
    func = click.option("--limit", type=click.IntRange(1, 50), default=None, metavar="N",
                        help="At most N matches, 1 to 50 (default 5).")(func)
    return click.option("--set", "--context-set", "set_id", default=None, metavar="ID",
                        help="Search this set only (default: the credential's bound set, or "
                        "every active set it sees).")(func)


def search(app: App, route: str, field: str, text: str, set_id: str | None, limit: int | None,
           fmt: str, printer: Callable[[Any], None]) -> None:
    body: dict[str, Any] = {field: text}
    if set_id is not None:
        body["contextSetId"] = set_id
    if limit is not None:
        body["limit"] = limit
    output.emit(app.client.post(f"{AGENT}/{route}", body, agent=True), fmt, printer)


def print_definitions(data: dict[str, Any]) -> None:
    output.table(["SET", "TERM", "MATCH", "SCORE", "ALIASES", "DEFINITION"], [
        [d.get("contextSetId"), d.get("term"), d.get("match"), d.get("score"), d.get("aliases"),
         d.get("definition")] for d in data.get("items", [])], "No definitions found.")


def print_answers(data: dict[str, Any]) -> None:
    output.table(["SET", "ID", "MATCH", "SCORE", "QUESTION", "CITATIONS", "ANSWER"], [
        [a.get("contextSetId"), a.get("id"), a.get("match"), a.get("score"), a.get("question"),
         a.get("citations"), a.get("answer")] for a in data.get("items", [])],
        "No verified answers found.")


@click.command(short_help="Definitions of a term (agent API).",
               help="Look up the definitions of a term: exact terms, then exact aliases, then "
               "word matches (agent API, CS_AGENT_TOKEN).")
@click.argument("term")
@search_options
@output_options
@pass_app
def lookup(app: App, term: str, set_id: str | None, limit: int | None, fmt: str) -> None:
    search(app, "definitions/lookup", "term", term, set_id, limit, fmt, print_definitions)


@click.command(short_help="Verified answers to a question (agent API).",
               help="Find verified answers to a question: exact questions first, then by word "
               "match (agent API, CS_AGENT_TOKEN).")
@click.argument("question")
@search_options
@output_options
@pass_app
def match(app: App, question: str, set_id: str | None, limit: int | None, fmt: str) -> None:
    search(app, "verified-answers/match", "question", question, set_id, limit, fmt,
           print_answers)


COMMANDS = (lookup, match)

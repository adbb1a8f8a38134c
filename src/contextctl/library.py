"""``agent lookup`` and ``agent match``: definitions by term and verified answers by question,
read with the agent credential in ``CS_AGENT_TOKEN`` from the sets it may see."""

from __future__ import annotations

import click

from context_service.client import routes
from context_service.contextctl import agent_api, output
from context_service.contextctl.options import App, F, output_options, pass_app
from context_service.contract import agent as c


def search_options(func: F) -> F:
    """``--set ID`` and ``--limit N`` (1 to 50, the service's default 5)."""
    func = click.option("--limit", type=click.IntRange(1, 50), default=None, metavar="N",
                        help="At most N matches, 1 to 50 (default 5).")(func)
    return click.option("--set", "--context-set", "set_id", default=None, metavar="ID",
                        help="Search this set only (default: the credential's bound set, or "
                        "every active set it sees).")(func)


def print_definitions(data: c.DefinitionMatches) -> None:
    output.table(["SET", "TERM", "MATCH", "SCORE", "ALIASES", "DEFINITION"], [
        [d.context_set_id, d.term, d.match, agent_api.score(d.score), d.aliases or None,
         d.definition]
        for d in data.items], "No definitions found.")


def print_answers(data: c.AnswerMatches) -> None:
    output.table(["SET", "ID", "MATCH", "SCORE", "QUESTION", "CITATIONS", "ANSWER"], [
        [a.context_set_id, a.id, a.match, agent_api.score(a.score), a.question,
         a.citations or None, a.answer]
        for a in data.items], "No verified answers found.")


@click.command(short_help="Definitions of a term (agent API).",
               help="Look up the definitions of a term: exact terms, then exact aliases, then "
               "word matches (agent API, CS_AGENT_TOKEN).")
@click.argument("term")
@search_options
@output_options
@pass_app
def lookup(app: App, term: str, set_id: str | None, limit: int | None, fmt: str) -> None:
    request = c.LookupDefinitionsRequest(term=term, context_set_id=set_id, limit=limit)
    agent_api.emit(agent_api.ask(app, routes.LOOKUP, request, c.DefinitionMatches), fmt,
                   print_definitions)


@click.command(short_help="Verified answers to a question (agent API).",
               help="Find verified answers to a question: exact questions first, then by word "
               "match (agent API, CS_AGENT_TOKEN).")
@click.argument("question")
@search_options
@output_options
@pass_app
def match(app: App, question: str, set_id: str | None, limit: int | None, fmt: str) -> None:
    request = c.MatchVerifiedAnswersRequest(question=question, context_set_id=set_id,
                                            limit=limit)
    agent_api.emit(agent_api.ask(app, routes.MATCH, request, c.AnswerMatches), fmt,
                   print_answers)


COMMANDS = (lookup, match)

"""``agent sets``: context sets, managed as a workspace member (create and replace from a JSON
file, archive, list, show) or read as an agent with ``--agent`` (the credential's view)."""

from __future__ import annotations

from typing import Any

import click
import msgspec

from context_service.client import routes
from context_service.contextctl import agent_api, complete, output
from context_service.contextctl.client import segment
from context_service.contextctl.contexts import read_json_object
from context_service.contextctl.options import (
    App,
    group,
    namespace_option,
    output_options,
    pass_app,
)
from context_service.contract import agent as c

sets = group("sets", "Context sets: the curated scope agents read.",
             aliases={"ls": "list", "rm": "archive"})


def sets_path(namespace: str, set_id: str | None = None) -> str:
    path = f"/v1/namespaces/{segment(namespace)}/context-sets"
    return path if set_id is None else f"{path}/{segment(set_id)}"


def print_sets(data: dict[str, Any]) -> None:
    """The workspace's sets (``/v1``): both statuses."""
    output.table(["ID", "NAME", "STATUS", "VERSION", "COLLECTIONS", "UPDATED"], [
        [s.get("id"), s.get("name"), s.get("status"), s.get("version"), s.get("collections"),
         s.get("updatedAt")] for s in data.get("items", [])], "No context sets found.")


def print_agent_sets(data: c.ContextSetList) -> None:
    """The sets a credential sees (active ones only), with ``SCORE`` when a query ranked them."""
    scored = any(s.score is not msgspec.UNSET for s in data.items)
    score = ["SCORE"] if scored else []
    output.table(["ID", "NAME", "VERSION", "COLLECTIONS", *score, "DESCRIPTION"], [
        [s.id, s.name, s.version, s.collections,
         *([agent_api.score(s.score)] if scored else []),
         _given(s.description)] for s in data.items], "No context sets found.")


def _given(value: object) -> object:
    return None if value is msgspec.UNSET else value


def print_agent_set(s: c.AgentContextSet) -> None:
    """A set as the credential reads it: the same lines as the workspace's view of it."""
    print_set(msgspec.to_builtins(s))


def template_id(template: Any) -> Any:
    """The admin view lists template ids, the agent view template objects."""
    return template.get("id") if isinstance(template, dict) else template


def print_set(s: dict[str, Any]) -> None:
    pairs: list[tuple[str, object]] = [
        ("ID", s.get("id")), ("Name", s.get("name")), ("Description", s.get("description")),
        ("Status", s.get("status")), ("Version", s.get("version")),
        ("Collections", s.get("collections")),
        ("Query templates", [template_id(t) for t in s.get("queryTemplates", [])]),
        ("Created", s.get("createdAt")), ("Updated", s.get("updatedAt"))]
    output.block("Context set", [(k, v) for k, v in pairs if v not in (None, "", [])])
    output.section("Verified answers", ["ID", "QUESTION", "CITATIONS", "ANSWER"], [
        [a.get("id"), a.get("question"), a.get("citations"), a.get("answer")]
        for a in s.get("verifiedAnswers", [])])
    output.section("Definitions", ["TERM", "ALIASES", "DEFINITION"], [
        [d.get("term"), d.get("aliases"), d.get("definition")] for d in s.get("definitions", [])])
    output.section("Instructions", ["ID", "TEXT"], [
        [i.get("id"), i.get("text")] for i in s.get("instructions", [])])
    output.section("Required evidence", ["ID", "DESCRIPTION", "QUERY"], [
        [r.get("id"), r.get("description"), r.get("query")]
        for r in s.get("requiredEvidence", [])])


agent_option = click.option(
    "--agent", "as_agent", is_flag=True,
    help="Ask the agent API with the credential in CS_AGENT_TOKEN (the sets it may see).")


def no_namespace_with_agent(namespace: str | None) -> None:
    if namespace is not None:
        raise click.UsageError("-n cannot be combined with --agent: the credential's workspace "
                               "is used")


@sets.command(name="list", short_help="List context sets (--agent: those a credential sees).",
              help="List a workspace's context sets (--agent: the active sets a "
              "credential sees, ranked against --query).")
@click.option("--query", default=None, help="Rank names and descriptions by words (--agent).")
@click.option("--limit", type=click.IntRange(1, 100), default=None,
              help="At most N sets, 1 to 100 (--agent; default 20).")
@agent_option
@namespace_option
@output_options
@pass_app
def list_sets(app: App, query: str | None, limit: int | None, as_agent: bool,
              namespace: str | None, fmt: str) -> None:
    if not as_agent:
        if query is not None or limit is not None:
            raise click.UsageError("--query and --limit need --agent")
        output.emit(app.client.get(sets_path(app.namespace(namespace))), fmt, print_sets)
        return
    no_namespace_with_agent(namespace)
    request = c.ListContextSetsRequest(query=query, limit=limit)
    agent_api.emit(agent_api.ask(app, routes.SETS_LIST, request, c.ContextSetList), fmt,
                   print_agent_sets)


@sets.command(name="get", short_help="Show a context set (--agent: as a credential reads it).",
              help="Show a context set (--agent: as the credential reads it; ID may "
              "be left out for a credential bound to a set).")
@click.argument("set_id", metavar="ID", required=False, shell_complete=complete.context_sets)
@agent_option
@namespace_option
@output_options
@pass_app
def get_set(app: App, set_id: str | None, as_agent: bool, namespace: str | None,
            fmt: str) -> None:
    if not as_agent:
        if set_id is None:
            raise click.UsageError("ID is required (or use --agent with a bound credential)")
        output.emit(app.client.get(sets_path(app.namespace(namespace), set_id)), fmt, print_set)
        return
    no_namespace_with_agent(namespace)
    request = c.GetContextSetRequest(context_set_id=set_id)
    agent_api.emit(agent_api.ask(app, routes.SETS_GET, request, c.AgentContextSet), fmt,
                   print_agent_set)


set_file = click.argument("file", type=click.File("r"), metavar="FILE.json")
set_id_argument = click.argument("set_id", metavar="ID", shell_complete=complete.context_sets)


@sets.command(short_help="Create a context set from a JSON file.",
              help="Create a context set from a JSON file (- for standard input): its id, name, "
              "collections and optional content.")
@set_file
@namespace_option
@output_options
@pass_app
def create(app: App, file: click.File, namespace: str | None, fmt: str) -> None:
    body = read_json_object(file, getattr(file, "name", "the context set file"))
    output.emit(app.client.post(sets_path(app.namespace(namespace)), body), fmt, print_set)


@sets.command(short_help="Replace a context set's content with a new version.",
              help="Replace a context set's whole content with a new version from a JSON file "
              "(its id may be left out).")
@set_id_argument
@set_file
@namespace_option
@output_options
@pass_app
def replace(app: App, set_id: str, file: click.File, namespace: str | None, fmt: str) -> None:
    body = read_json_object(file, getattr(file, "name", "the context set file"))
    reply = app.client.put(sets_path(app.namespace(namespace), set_id), body)
    output.emit(reply, fmt, print_set)
    if reply.position is None:  # the service records nothing for identical content
        output.note(f"context set {set_id} unchanged: the content equals version "
                    f"{reply.data.get('version')}")


@sets.command(short_help="Archive a context set (final).",
              help="Archive a context set (final: agents stop seeing it, its id stays taken).")
@set_id_argument
@namespace_option
@pass_app
def archive(app: App, set_id: str, namespace: str | None) -> None:
    reply = app.client.delete(sets_path(app.namespace(namespace), set_id))
    output.line(f"archived context set {set_id}" if reply.position is not None
                else f"context set {set_id} is already archived")

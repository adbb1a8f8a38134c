"""``agent``: workspace members, agent credentials (the token is shown once, at creation) and
context sets, over the Agent Context API. A workspace is a namespace (``-n``)."""

from __future__ import annotations

from typing import Any

import click

from context_service.contextctl import output
from context_service.contextctl.client import segment
from context_service.contextctl.options import (
    App,
    group,
    namespace_option,
    output_options,
    parse_subject,
    pass_app,
)

ROLES = ("owner", "admin", "member", "viewer")
SCOPES = ("context:read", "queries:run")
TOKEN_WARNING = ("Store this token now: it is shown only once and the service cannot show it "
                 "again.")

agent = group("agent", "Workspace members, agent credentials and context sets.")
members = group("members", "Who belongs to a workspace, with which role.",
                aliases={"ls": "list", "rm": "remove"})
credentials = group("credentials", "Scoped bdk_ credentials for agents.",
                    aliases={"ls": "list", "rm": "revoke"})
sets = group("sets", "Context sets: the curated scope agents read.", aliases={"ls": "list"})
for _group in (members, credentials, sets):
    agent.add_command(_group)


def members_path(namespace: str) -> str:
    return f"/v1/namespaces/{segment(namespace)}/members"


def print_members(data: dict[str, Any]) -> None:
    output.table(["SUBJECT", "ROLE", "SINCE"], [
        [output.subject(m.get("subject")), m.get("role"), m.get("since")]
        for m in data.get("items", [])], "No members found.")


@members.command(name="list", help="List the workspace's members.")
@namespace_option
@output_options
@pass_app
def list_members(app: App, namespace: str | None, fmt: str) -> None:
    output.emit(app.client.get(members_path(app.namespace(namespace))), fmt, print_members)


@members.command(name="set", help="Add a member or change its role: "
                 "contextctl agent members set user:bob viewer.")
@click.argument("subject")
@click.argument("role", type=click.Choice(ROLES))
@namespace_option
@output_options
@pass_app
def set_member(app: App, subject: str, role: str, namespace: str | None, fmt: str) -> None:
    ns = app.namespace(namespace)
    reply = app.client.put(members_path(ns), {"subject": parse_subject(subject), "role": role})
    output.emit(reply, fmt, lambda m: output.line(
        f"{output.subject(m.get('subject'))} is {m.get('role')} in {ns}"))


@members.command(name="remove", help="Remove a member (its credentials stop working).")
@click.argument("subject")
@namespace_option
@pass_app
def remove_member(app: App, subject: str, namespace: str | None) -> None:
    ns = app.namespace(namespace)
    parsed = parse_subject(subject)
    member = segment(parsed["kind"]) + ":" + segment(parsed["name"])
    app.client.delete(f"{members_path(ns)}/{member}")
    output.line(f"removed {subject} from {ns}")


def credentials_path(namespace: str, credential: str | None = None) -> str:
    path = f"/api/w/{segment(namespace)}/agent-credentials"
    return path if credential is None else f"{path}/{segment(credential)}"


def print_credential(c: dict[str, Any]) -> None:
    pairs: list[tuple[str, object]] = [
        ("ID", c.get("id")), ("Name", c.get("name")), ("Scopes", c.get("scopes")),
        ("Context set", c.get("contextSetId")), ("Status", c.get("status")),
        ("Created by", c.get("createdBy")), ("Created", c.get("createdAt")),
        ("Expires", c.get("expiresAt"))]
    if c.get("revokedAt"):
        pairs += [("Revoked", c.get("revokedAt")), ("Revoked by", c.get("revokedBy"))]
    if c.get("token"):
        pairs.append(("Token", c["token"]))
    output.block("Agent credential", [(k, v) for k, v in pairs if v not in (None, "")])


def print_credentials(data: dict[str, Any]) -> None:
    output.table(["ID", "NAME", "SCOPES", "STATUS", "EXPIRES", "CREATED BY", "CONTEXT SET"], [
        [c.get("id"), c.get("name"), c.get("scopes"), c.get("status"), c.get("expiresAt"),
         c.get("createdBy"), c.get("contextSetId")] for c in data.get("items", [])],
        "No agent credentials found.")


@credentials.command(help="Create a credential; its token is printed once.")
@click.argument("name")
@click.option("--scope", "scopes", multiple=True, type=click.Choice(SCOPES),
              help="Repeatable (default context:read).")
@click.option("--expires-in-days", type=int, default=30, show_default=True,
              help="1 to 365 days.")
@click.option("--context-set", default=None, metavar="ID", help="Bind it to one context set.")
@namespace_option
@output_options
@pass_app
def create(app: App, name: str, scopes: tuple[str, ...], expires_in_days: int,
           context_set: str | None, namespace: str | None, fmt: str) -> None:
    body: dict[str, Any] = {"name": name, "scopes": list(dict.fromkeys(scopes or SCOPES[:1])),
                            "expiresInDays": expires_in_days}
    if context_set is not None:
        body["contextSetId"] = context_set
    reply = app.client.post(credentials_path(app.namespace(namespace)), body)
    output.emit(reply, fmt, print_credential)
    output.note(TOKEN_WARNING)


@credentials.command(name="list", help="List every credential of the workspace, newest first.")
@namespace_option
@output_options
@pass_app
def list_credentials(app: App, namespace: str | None, fmt: str) -> None:
    reply = app.client.get(credentials_path(app.namespace(namespace)))
    output.emit(reply, fmt, print_credentials)


@credentials.command(help="Show one credential (never its token).")
@click.argument("credential", metavar="ID")
@namespace_option
@output_options
@pass_app
def get(app: App, credential: str, namespace: str | None, fmt: str) -> None:
    reply = app.client.get(credentials_path(app.namespace(namespace), credential))
    output.emit(reply, fmt, print_credential)


@credentials.command(help="Revoke a credential (final; repeating it is harmless).")
@click.argument("credential", metavar="ID")
@namespace_option
@pass_app
def revoke(app: App, credential: str, namespace: str | None) -> None:
    app.client.delete(credentials_path(app.namespace(namespace), credential))
    output.line(f"revoked credential {credential}")


def sets_path(namespace: str, set_id: str | None = None) -> str:
    path = f"/v1/namespaces/{segment(namespace)}/context-sets"
    return path if set_id is None else f"{path}/{segment(set_id)}"


def print_sets(data: dict[str, Any]) -> None:
    scored = any("score" in s for s in data.get("items", []))
    headers = ["ID", "NAME", "STATUS", "VERSION", "COLLECTIONS"] + (["SCORE"] if scored else [])
    output.table(headers, [
        [s.get("id"), s.get("name"), s.get("status", "active"), s.get("version"),
         s.get("collections")] + ([s.get("score")] if scored else [])
        for s in data.get("items", [])], "No context sets found.")


def print_set(s: dict[str, Any]) -> None:
    templates = [t.get("id") if isinstance(t, dict) else t for t in s.get("queryTemplates", [])]
    pairs: list[tuple[str, object]] = [
        ("ID", s.get("id")), ("Name", s.get("name")), ("Description", s.get("description")),
        ("Status", s.get("status")), ("Version", s.get("version")),
        ("Collections", s.get("collections")),
        ("Verified answers", len(s.get("verifiedAnswers", []))),
        ("Definitions", len(s.get("definitions", []))),
        ("Instructions", len(s.get("instructions", []))),
        ("Required evidence", len(s.get("requiredEvidence", []))),
        ("Query templates", templates), ("Updated", s.get("updatedAt"))]
    output.block("Context set", [(k, v) for k, v in pairs if v not in (None, "", [])])


agent_option = click.option(
    "--agent", "as_agent", is_flag=True,
    help="Ask the agent API with the credential in CS_AGENT_TOKEN (the sets it may see).")


@sets.command(name="list", help="List context sets (--agent: those a credential sees, "
              "optionally matched against --query).")
@click.option("--query", default=None, help="Match names and descriptions (with --agent).")
@click.option("--limit", type=click.IntRange(1, 100), default=None, help="With --agent.")
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
    body: dict[str, Any] = {}
    if query is not None:
        body["query"] = query
    if limit is not None:
        body["limit"] = limit
    output.emit(app.client.post("/api/agent/v1/context-sets/list", body, agent=True), fmt,
                print_sets)


@sets.command(name="get", help="Show a context set (with --agent, ID may be left out for a bound "
              "credential).")
@click.argument("set_id", metavar="ID", required=False)
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
    body = {} if set_id is None else {"contextSetId": set_id}
    output.emit(app.client.post("/api/agent/v1/context-sets/get", body, agent=True), fmt,
                print_set)


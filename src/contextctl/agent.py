"""``agent``: workspace members and agent credentials (the token is shown once, at creation)
over the Agent Context API, with the context sets and library commands of their own modules. A
workspace is a namespace (``-n``)."""

from __future__ import annotations

from typing import Any

import click

from context_service.contextctl import library, output, packs
from context_service.contextctl.client import segment
from context_service.contextctl.context_sets import sets
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

agent = group("agent", "Workspace members, agent credentials, context sets, the library "
              "agents read, context packs and their replays.")
agent.short_help = "Members, credentials, context sets, packs, replays."
members = group("members", "Who belongs to a workspace, with which role.",
                aliases={"ls": "list", "rm": "remove"})
credentials = group("credentials", "Scoped bdk_ credentials for agents.",
                    aliases={"ls": "list", "rm": "revoke"})
for _command in (members, credentials, sets, *library.COMMANDS, *packs.COMMANDS):
    agent.add_command(_command)


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


@members.command(name="set", short_help="Add a member or change its role.",
                 help="Add a member or change its role: "
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

"""``ctx grants|grant|revoke`` and ``ctx consumers|attach|detach``: who may use a context and
who uses it."""

from __future__ import annotations

from typing import Any

import click

from context_service.contextctl import output
from context_service.contextctl.client import context_path
from context_service.contextctl.contexts import as_of_options, as_of_params, context_argument
from context_service.contextctl.options import (
    App,
    namespace_option,
    output_options,
    parse_subject,
    pass_app,
)

PERMISSIONS = ("read", "write", "attach", "derive", "administer")
NEEDS_READ = ("write", "attach", "derive")


def permission_list(text: str) -> list[str]:
    """Comma-separated, de-duplicated in order; the service's rules checked before sending."""
    chosen = list(dict.fromkeys(p.strip() for p in text.split(",") if p.strip()))
    if not chosen:
        raise click.BadParameter("at least one permission is required", param_hint="--permissions")
    for permission in chosen:
        if permission not in PERMISSIONS:
            raise click.BadParameter(f'unsupported permission "{permission}"',
                                     param_hint="--permissions")
    for permission in NEEDS_READ:
        if permission in chosen and "read" not in chosen:
            raise click.BadParameter(f'permission "{permission}" requires read',
                                     param_hint="--permissions")
    return chosen


def print_grants(data: dict[str, Any]) -> None:
    output.table(["SUBJECT", "PERMISSIONS", "CREATED"], [
        [output.subject(g.get("subject")), g.get("permissions"), g.get("createdAt")]
        for g in data.get("items", [])], "No grants found.")


@click.command(help="Show a context's grants (needs administer).")
@context_argument
@namespace_option
@as_of_options
@output_options
@pass_app
def grants(app: App, name: str, namespace: str | None, as_of: str | None,
           as_of_position: int | None, fmt: str) -> None:
    reply = app.client.get(context_path(app.namespace(namespace), name, "grants"),
                           as_of_params(as_of, as_of_position))
    output.emit(reply, fmt, print_grants)


@click.command(short_help="Set a subject's grant, replacing any grant it had.",
               help="Set a subject's grant, replacing any grant it had: "
               "contextctl ctx grant notes agent:bot --permissions read,attach.")
@context_argument
@click.argument("subject")
@click.option("-p", "--permissions", default="read", show_default=True,
              help="Comma-separated: read, write, attach, derive, administer.")
@namespace_option
@output_options
@pass_app
def grant(app: App, name: str, subject: str, permissions: str, namespace: str | None,
          fmt: str) -> None:
    body = {"subject": parse_subject(subject), "permissions": permission_list(permissions)}
    reply = app.client.put(context_path(app.namespace(namespace), name, "grants"), body)
    output.emit(reply, fmt, lambda _: output.line(
        f"granted {','.join(body['permissions'])} on {name} to {subject}"))  # type: ignore[arg-type]


@click.command(help="Revoke a subject's grant: contextctl ctx revoke notes agent:bot.")
@context_argument
@click.argument("subject")
@namespace_option
@output_options
@pass_app
def revoke(app: App, name: str, subject: str, namespace: str | None, fmt: str) -> None:
    reply = app.client.delete(context_path(app.namespace(namespace), name, "grants"),
                              parse_subject(subject))
    output.emit(reply, fmt, lambda _: output.line(f"revoked {subject} on {name}"))


def print_consumers(data: dict[str, Any]) -> None:
    output.table(["CONSUMER", "SUBJECT", "ACCESS", "ACTIVE", "DESIRED", "SINCE"], [
        [f"{c.get('kind')}/{c.get('name')}", output.subject(c.get("subject")),
         c.get("accessMode"), c.get("active"), c.get("desired"), c.get("since")]
        for c in data.get("items", [])], "No consumers found.")


@click.command(help="Show declared and observed consumers of a context.")
@context_argument
@namespace_option
@output_options
@pass_app
def consumers(app: App, name: str, namespace: str | None, fmt: str) -> None:
    reply = app.client.get(context_path(app.namespace(namespace), name, "consumers"))
    output.emit(reply, fmt, print_consumers)


def consumer_body(consumer: str, subject: str | None) -> dict[str, Any]:
    kind, sep, consumer_name = consumer.partition("/")
    if not sep or not kind or not consumer_name:
        raise click.BadParameter(f"{consumer!r} is not kind/name (e.g. agent/summarizer)",
                                 param_hint="CONSUMER")
    body: dict[str, Any] = {"kind": kind, "name": consumer_name}
    if subject is not None:
        body["subject"] = parse_subject(subject, "--subject")
    return body


subject_option = click.option("--subject", default=None, metavar="KIND:NAME",
                              help="Whose consumer it is (default: the caller).")


@click.command(help="Declare a consumer: contextctl ctx attach notes agent/summarizer.")
@context_argument
@click.argument("consumer")
@subject_option
@click.option("--read-write", is_flag=True, help="Mount read-write (needs write).")
@click.option("--active", is_flag=True, help="Record the consumer as active now.")
@namespace_option
@output_options
@pass_app
def attach(app: App, name: str, consumer: str, subject: str | None, read_write: bool,
           active: bool, namespace: str | None, fmt: str) -> None:
    body = consumer_body(consumer, subject)
    body["accessMode"] = "readWrite" if read_write else "readOnly"
    body["active"] = active
    reply = app.client.put(context_path(app.namespace(namespace), name, "consumers"), body)
    output.emit(reply, fmt, lambda _: output.line(
        f"attached {consumer} to {name} ({body['accessMode']})"))


@click.command(help="Remove a declared consumer: contextctl ctx detach notes agent/summarizer.",
               short_help="Remove a declared consumer of a context.")
@context_argument
@click.argument("consumer")
@subject_option
@namespace_option
@output_options
@pass_app
def detach(app: App, name: str, consumer: str, subject: str | None, namespace: str | None,
           fmt: str) -> None:
    reply = app.client.delete(context_path(app.namespace(namespace), name, "consumers"),
                              consumer_body(consumer, subject))
    output.emit(reply, fmt, lambda _: output.line(f"detached {consumer} from {name}"))


COMMANDS = (grant, revoke, consumers, attach, detach)

"""``ctx``: named contexts (create, list, get, delete) and their revisions (list, publish)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import click

from context_service.contextctl import complete, output
from context_service.contextctl.client import Reply, context_path
from context_service.contextctl.options import (
    App,
    group,
    namespace_option,
    output_options,
    pass_app,
)

TYPES = ("workspace", "state", "memory", "knowledge", "artifacts")
MODES = ("ReadWriteOnce", "ReadWriteMany")

ctx = group("ctx", "Named contexts: access, consumers, revisions.",
            aliases={"ls": "list", "rm": "delete"})


def context_argument(func: Any) -> Any:
    return click.argument("name", shell_complete=complete.contexts)(func)


def as_of_options(func: Any) -> Any:
    func = click.option("--as-of-position", type=click.IntRange(min=0), default=None,
                        metavar="N", help="The state as of log position N.")(func)
    return click.option("--as-of", default=None, metavar="TIME",
                        help="The state as of an RFC 3339 time (e.g. 2026-03-01T09:00:00Z).")(func)


def as_of_params(as_of: str | None, as_of_position: int | None) -> dict[str, str]:
    if as_of is not None and as_of_position is not None:
        raise click.UsageError("--as-of cannot be combined with --as-of-position")
    if as_of is not None:
        return {"asOf": as_of}
    if as_of_position is not None:
        return {"asOfPosition": str(as_of_position)}
    return {}


def class_name(name: str | None) -> str:
    return name or "<default>"


def part(item: dict[str, Any], key: str) -> dict[str, Any]:
    """A nested object of an answer; one of another shape shows as empty (never a traceback)."""
    value = item.get(key)
    return value if isinstance(value, dict) else {}


def entries(item: dict[str, Any], key: str) -> list[dict[str, Any]]:
    """A nested array of objects of an answer; what is not one is left out."""
    value = item.get(key)
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def storage_summary(item: dict[str, Any]) -> str:
    storage = part(item, "storage")
    return (f"{storage.get('size', '')} {storage.get('accessMode', '')} "
            f"({class_name(storage.get('storageClass'))})")


def resource(item: dict[str, Any]) -> str:
    attachment = part(item, "attachment")
    return f"{str(attachment.get('kind', '')).lower()}/{attachment.get('claimName', '')}"


def consumer_label(consumer: dict[str, Any]) -> str:
    state = "active" if consumer.get("active") else "inactive"
    return f"{consumer.get('kind')}/{consumer.get('name')} ({consumer.get('accessMode')}, {state})"


def print_context(item: dict[str, Any]) -> None:
    storage = part(item, "storage")
    pairs: list[tuple[str, object]] = [
        ("Name", item.get("name")), ("Namespace", item.get("namespace")),
        ("Type", item.get("type")), ("Status", item.get("status")),
        ("Storage", f"{storage.get('size', '')} {storage.get('accessMode', '')}"),
        ("Storage class", class_name(storage.get("storageClass"))),
        ("Kubernetes resource", resource(item))]
    if item.get("currentRevision"):
        pairs.append(("Current revision", item["currentRevision"]))
    if revisions := entries(item, "revisions"):
        pairs.append(("Revisions", len(revisions)))
    if item.get("effectiveAccess"):
        pairs.append(("Access", item["effectiveAccess"]))
    if consumers := entries(item, "consumers"):
        pairs.append(("Consumers", ", ".join(consumer_label(c) for c in consumers)))
    output.block("Context", pairs)
    if item.get("status") == "provisioning":
        attachment = part(item, "attachment")
        output.line()
        output.line(f"Inspect: kubectl -n {item.get('namespace')} get "
                    f"{str(attachment.get('kind', '')).lower()} {attachment.get('claimName')}")
        output.line("Hint: a WaitForFirstConsumer storage class binds the PVC after a workload "
                    "mounts it.")


def emit_context(reply: Reply, fmt: str) -> None:
    """A ContextResource answer; as text only once it is one (an object), so another
    server's answer is one line of error, not a traceback."""
    output.emit(reply, fmt, lambda _: print_context(reply.document()))


def emit_list(reply: Reply, fmt: str, text: Callable[[dict[str, Any]], None]) -> None:
    """A list answer (spec 1.1.8); as text only once it is one."""
    output.emit(reply, fmt, lambda _: text(reply.listing()))


def print_contexts(data: dict[str, Any]) -> None:
    output.table(["NAME", "NAMESPACE", "TYPE", "STATUS", "STORAGE", "KUBERNETES RESOURCE"], [
        [c.get("name"), c.get("namespace"), c.get("type"), c.get("status"), storage_summary(c),
         resource(c)] for c in data.get("items", [])], "No contexts found.")


@ctx.command(help="Create a named context (the caller becomes its owner).")
@click.argument("name")
@namespace_option
@click.option("--type", "type_", type=click.Choice(TYPES), default="workspace",
              show_default=True, help="Classification.")
@click.option("--size", default="1Gi", show_default=True, help="Storage size.")
@click.option("--access-mode", type=click.Choice(MODES), default="ReadWriteOnce",
              show_default=True)
@click.option("--storage-class", default=None, metavar="NAME",
              help="Storage class (default CS_STORAGE_CLASS).")
@click.option("--backend", default="pvc", show_default=True, help="Storage backend.")
@output_options
@pass_app
def create(app: App, name: str, namespace: str | None, type_: str, size: str, access_mode: str,
           storage_class: str | None, backend: str, fmt: str) -> None:
    storage = {"backend": backend, "size": size, "accessMode": access_mode}
    chosen = app.settings.storage_class if storage_class is None else storage_class
    if chosen:
        storage["storageClass"] = chosen
    body = {"name": name, "namespace": app.namespace(namespace), "type": type_,
            "storage": storage}
    emit_context(app.client.post("/v1/contexts", body), fmt)


@ctx.command(name="list", help="List the contexts you hold any permission on.")
@namespace_option
@as_of_options
@output_options
@pass_app
def list_contexts(app: App, namespace: str | None, as_of: str | None,
                  as_of_position: int | None, fmt: str) -> None:
    reply = app.client.get(context_path(app.namespace(namespace)),
                           as_of_params(as_of, as_of_position))
    emit_list(reply, fmt, print_contexts)


@ctx.command(help="Show a context (needs read).")
@context_argument
@namespace_option
@as_of_options
@output_options
@pass_app
def get(app: App, name: str, namespace: str | None, as_of: str | None,
        as_of_position: int | None, fmt: str) -> None:
    reply = app.client.get(context_path(app.namespace(namespace), name),
                           as_of_params(as_of, as_of_position))
    emit_context(reply, fmt)


@ctx.command(help="Delete a context and its PVC (refused while it has consumers).")
@context_argument
@namespace_option
@click.option("--force", is_flag=True, help="Delete even when consumers remain.")
@pass_app
def delete(app: App, name: str, namespace: str | None, force: bool) -> None:
    app.client.delete(context_path(app.namespace(namespace), name),
                      params={"force": "true"} if force else None)
    output.line(f"deleted {name}")


def print_revisions(data: dict[str, Any]) -> None:
    output.table(["ID", "CREATED", "OPERATION", "PRODUCER", "FILES", "BYTES"], [
        [str(r.get("id", ""))[:12], r.get("createdAt"), r.get("operation"), r.get("producer"),
         r.get("files"), r.get("bytes")] for r in data.get("items", [])],
        "No revisions found.")


@ctx.command(help="List a context's revisions, oldest first.")
@context_argument
@namespace_option
@output_options
@pass_app
def revisions(app: App, name: str, namespace: str | None, fmt: str) -> None:
    reply = app.client.get(context_path(app.namespace(namespace), name, "revisions"))
    emit_list(reply, fmt, print_revisions)


def read_json_object(source: click.File, what: str) -> dict[str, Any]:
    try:
        data = json.load(source)  # type: ignore[arg-type]
    except ValueError as exc:
        raise click.UsageError(f"{what} is not valid JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise click.UsageError(f"{what} must hold one JSON object")
    return data


@ctx.command(help="Publish a revision from a JSON file (- for standard input).")
@context_argument
@click.argument("file", type=click.File("r"))
@namespace_option
@output_options
@pass_app
def publish(app: App, name: str, file: click.File, namespace: str | None, fmt: str) -> None:
    revision = read_json_object(file, getattr(file, "name", "the revision file"))
    reply = app.client.post(context_path(app.namespace(namespace), name, "revisions"), revision)
    output.emit(reply, fmt, lambda _: published(reply.document()))


def published(item: dict[str, Any]) -> None:
    output.line(f"published revision {item.get('currentRevision')} to {item.get('name')}")

"""``snapshot``: CSI snapshots of a context, clones into new contexts, restore, retention,
garbage collection and what the storage backend can do."""

from __future__ import annotations

from typing import Any

import click

from context_service.contextctl import output
from context_service.contextctl.client import context_path
from context_service.contextctl.contexts import context_argument
from context_service.contextctl.options import (
    App,
    group,
    namespace_option,
    output_options,
    pass_app,
)

snapshot = group("snapshot", "Snapshots, clones, restore, retention, GC and capabilities.",
                 aliases={"ls": "list"})
snapshot.short_help = "Snapshots, clones, restore, retention and GC."


def snapshot_row(s: dict[str, Any]) -> list[object]:
    return [s.get("name"), s.get("status"), str(s.get("revision", ""))[:12],
            s.get("snapshotClass"), s.get("createdAt"), s.get("protected", False),
            s.get("error")]


SNAPSHOT_HEADERS = ["NAME", "STATUS", "REVISION", "CLASS", "CREATED", "PROTECTED", "ERROR"]


def print_snapshot(s: dict[str, Any]) -> None:
    labels = ",".join(f"{k}={v}" for k, v in (s.get("labels") or {}).items())
    pairs: list[tuple[str, object]] = [
        ("Name", s.get("name")), ("Context", f"{s.get('namespace')}/{s.get('contextName')}"),
        ("Status", s.get("status")), ("Revision", s.get("revision")),
        ("VolumeSnapshot", s.get("snapshotName")), ("Snapshot class", s.get("snapshotClass")),
        ("Source claim", s.get("sourceClaimName")), ("Created", s.get("createdAt")),
        ("Protected", s.get("protected", False)), ("Labels", labels), ("Error", s.get("error"))]
    output.block("Snapshot", [(k, v) for k, v in pairs if v not in (None, "")])


def print_snapshots(data: dict[str, Any]) -> None:
    output.table(SNAPSHOT_HEADERS, [snapshot_row(s) for s in data.get("items", [])],
                 "No snapshots found.")


def label_map(values: tuple[str, ...]) -> dict[str, str]:
    labels = {}
    for value in values:
        key, sep, text = value.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"{value!r} is not key=value", param_hint="--label")
        labels[key] = text
    return labels


@snapshot.command(help="Take a snapshot of a context (needs write).")
@context_argument
@click.argument("snapshot_name", metavar="SNAPSHOT")
@click.option("--class", "snapshot_class", default=None, metavar="NAME",
              help="VolumeSnapshotClass (default: chosen for the storage driver).")
@click.option("--protected", is_flag=True, help="Never removed by garbage collection.")
@click.option("--label", "labels", multiple=True, metavar="KEY=VALUE", help="Repeatable.")
@namespace_option
@output_options
@pass_app
def create(app: App, name: str, snapshot_name: str, snapshot_class: str | None, protected: bool,
           labels: tuple[str, ...], namespace: str | None, fmt: str) -> None:
    body: dict[str, Any] = {"name": snapshot_name}
    if snapshot_class:
        body["snapshotClass"] = snapshot_class
    if protected:
        body["protected"] = True
    if labels:
        body["labels"] = label_map(labels)
    reply = app.client.post(context_path(app.namespace(namespace), name, "snapshots"), body)
    output.emit(reply, fmt, print_snapshot)


@snapshot.command(name="list", help="List a context's snapshots, oldest first.")
@context_argument
@namespace_option
@output_options
@pass_app
def list_snapshots(app: App, name: str, namespace: str | None, fmt: str) -> None:
    reply = app.client.get(context_path(app.namespace(namespace), name, "snapshots"))
    output.emit(reply, fmt, print_snapshots)


@snapshot.command(help="Show one snapshot with its observed status.")
@context_argument
@click.argument("snapshot_name", metavar="SNAPSHOT")
@namespace_option
@output_options
@pass_app
def get(app: App, name: str, snapshot_name: str, namespace: str | None, fmt: str) -> None:
    reply = app.client.get(context_path(app.namespace(namespace), name, "snapshots",
                                        snapshot_name))
    output.emit(reply, fmt, print_snapshot)


@snapshot.command(help="Clone a ready snapshot into a new context you own (needs derive).",
                  short_help="Clone a ready snapshot into a new context (needs derive).")
@context_argument
@click.argument("snapshot_name", metavar="SNAPSHOT")
@click.argument("target", metavar="NEW_CONTEXT")
@namespace_option
@output_options
@pass_app
def clone(app: App, name: str, snapshot_name: str, target: str, namespace: str | None,
          fmt: str) -> None:
    reply = app.client.post(context_path(app.namespace(namespace), name, "clones"),
                            {"name": target, "snapshot": snapshot_name})
    output.emit(reply, fmt, lambda _: output.line(
        f"cloned {name}/{snapshot_name} into {target}"))


@snapshot.command(help="Restore a snapshot in place (the PVC backend answers: clone instead).",
                  short_help="Restore a snapshot in place (PVC backend: clone instead).")
@context_argument
@click.argument("snapshot_name", metavar="SNAPSHOT")
@namespace_option
@output_options
@pass_app
def restore(app: App, name: str, snapshot_name: str, namespace: str | None, fmt: str) -> None:
    reply = app.client.post(context_path(app.namespace(namespace), name, "restore"),
                            {"snapshot": snapshot_name})
    output.emit(reply, fmt, lambda _: output.line(f"restored {name} from {snapshot_name}"))


@snapshot.command(help="Set the retention policy: keep a snapshot when either rule matches.",
                  short_help="Set the retention policy of the context's snapshots.")
@context_argument
@click.option("--keep-last", type=int, default=None, metavar="N",
              help="Keep the N newest snapshots.")
@click.option("--max-age", default=None, metavar="DURATION",
              help="Keep snapshots younger than this (168h, 1h30m).")
@click.option("--clear", is_flag=True, help="Remove the policy (GC then keeps every snapshot).")
@namespace_option
@output_options
@pass_app
def retention(app: App, name: str, keep_last: int | None, max_age: str | None, clear: bool,
              namespace: str | None, fmt: str) -> None:
    # the policy is replaced as a whole (spec: an empty body removes it), so removing it is
    # asked for by name, never by a command whose options were forgotten
    given = keep_last is not None or max_age is not None
    if given == clear:
        raise click.UsageError("give --keep-last, --max-age or both, or --clear to remove "
                               "the policy" if not clear else
                               "--clear removes the policy: give it without --keep-last "
                               "or --max-age")
    if clear:
        reply = app.client.put(context_path(app.namespace(namespace), name, "retention"), {})
        output.emit(reply, fmt, lambda _: output.line(f"retention of {name}: cleared"))
        return
    body: dict[str, Any] = {}
    if keep_last is not None:
        body["keepLast"] = keep_last
    if max_age is not None:
        body["maxAge"] = max_age
    reply = app.client.put(context_path(app.namespace(namespace), name, "retention"), body)
    output.emit(reply, fmt, lambda _: output.line(
        f"retention of {name}: keep last {keep_last or 0}, max age {max_age or 'unset'}"))


def print_gc(data: dict[str, Any]) -> None:
    verb = "would delete" if data.get("dryRun") else "deleted"
    rows = [[verb, *snapshot_row(s)[:5]] for s in data.get("deleted", [])]
    rows += [["kept", *snapshot_row(s)[:5]] for s in data.get("kept", [])]
    output.table(["ACTION", *SNAPSHOT_HEADERS[:5]], rows, "No snapshots.")


@snapshot.command(help="Apply the retention policy to the context's snapshots.")
@context_argument
@click.option("--dry-run", is_flag=True, help="Only report what would be deleted.")
@namespace_option
@output_options
@pass_app
def gc(app: App, name: str, dry_run: bool, namespace: str | None, fmt: str) -> None:
    reply = app.client.post(context_path(app.namespace(namespace), name, "gc"),
                            params={"dryRun": "true"} if dry_run else None)
    output.emit(reply, fmt, print_gc)


def print_capabilities(data: dict[str, Any]) -> None:
    output.block("Capabilities", [
        ("Snapshots", data.get("snapshots")), ("Clones", data.get("clones")),
        ("Restore", data.get("restore")), ("Driver", data.get("driver")),
        ("Snapshot class", data.get("snapshotClass")), ("Reason", data.get("reason"))])


@snapshot.command(help="What the storage backend can do for the context.")
@context_argument
@namespace_option
@output_options
@pass_app
def capabilities(app: App, name: str, namespace: str | None, fmt: str) -> None:
    reply = app.client.get(context_path(app.namespace(namespace), name, "capabilities"))
    output.emit(reply, fmt, print_capabilities)

"""``local``: contexts in the local filesystem store (``CS_CONTEXT_HOME``, default
``~/.contexts``): create them, capture their files as content-addressed revisions, list their
query records, query them as the service would, snapshot and restore them in place."""

from __future__ import annotations

from typing import Any

import click
from click.shell_completion import CompletionItem

from context_service.contextctl import output
from context_service.contextctl.contexts import TYPES, print_revisions
from context_service.contextctl.local import LocalContext, LocalStore, LocalStoreError, search
from context_service.contextctl.local.records import KNOWLEDGE_FILE, MEMORY_FILE
from context_service.contextctl.options import AliasedGroup, output_options
from context_service.contextctl.query import print_results, query_arguments


class StoreGroup(AliasedGroup):
    """A group whose commands read and write files: an ``OSError`` (a full disk, a permission,
    a file where a directory belongs) ends the command like any other error, in one line with
    exit code 1, instead of a traceback."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except OSError as exc:
            raise LocalStoreError(file_error(exc)) from exc


def file_error(exc: OSError) -> str:
    reason = exc.strerror or str(exc)
    return f"{reason}: {exc.filename}" if exc.filename else reason


def store_group(name: str, help_text: str, aliases: dict[str, str] | None = None) -> StoreGroup:
    return StoreGroup(name=name, help=help_text, aliases=aliases,
                      context_settings={"help_option_names": ["-h", "--help"]})


local = store_group("local", "The local context store: revisions, records, query, restore.",
                    aliases={"ls": "list"})
local.short_help = "The local context store: revisions, records, query."


def store() -> LocalStore:
    return LocalStore.from_environment()


def _names(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    try:
        names = [c.name for c in store().contexts()]
    except Exception:  # completion prints nothing into the shell, whatever the store holds
        return []
    return [CompletionItem(n) for n in names if n.startswith(incomplete)]


def local_context(func: Any) -> Any:
    return click.argument("name", shell_complete=_names)(func)


def key_values(values: tuple[str, ...], hint: str) -> dict[str, str]:
    pairs = {}
    for value in values:
        key, sep, text = value.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"{value!r} is not key=value", param_hint=hint)
        pairs[key] = text
    return pairs


def source_refs(values: tuple[str, ...]) -> list[dict[str, str]]:
    refs = []
    for value in values:
        parts = value.split(":")
        if len(parts) != 3 or not all(parts):
            raise click.BadParameter(f"{value!r} is not CONTEXT:TYPE:REVISION",
                                     param_hint="--source")
        refs.append(dict(zip(("context", "type", "revision"), parts, strict=True)))
    return refs


def describe(context: LocalContext) -> dict[str, Any]:
    item: dict[str, Any] = {"name": context.name, "type": context.type,
                            "root": str(context.root)}
    if current := context.current_revision():
        item["currentRevision"] = current
    return item


def short(revision: object) -> str:
    return str(revision or "")[:12]


def totals(files: int, size: int) -> str:
    return f"{files} file{'' if files == 1 else 's'}, {size} byte{'' if size == 1 else 's'}"


@local.command(short_help="Create a local context under CS_CONTEXT_HOME.",
               help="Create a local context: CS_CONTEXT_HOME/NAME with its portable roots "
               "harnesses/, memory/, knowledge/ and artifacts/ (an existing directory of that "
               "name becomes the context, its files kept).")
@local_context
@click.option("--type", "type_", type=click.Choice(TYPES), required=True, help="Classification.")
@output_options
def init(name: str, type_: str, fmt: str) -> None:
    context = store().create(name, type_)
    output.emit_data(describe(context), fmt, lambda item: output.line(
        f"created local context {item['name']} ({item['type']}) in {item['root']}"))


def print_local_contexts(data: dict[str, Any]) -> None:
    output.table(["NAME", "TYPE", "CURRENT REVISION", "DIRECTORY"], [
        [c.get("name"), c.get("type"), short(c.get("currentRevision")), c.get("root")]
        for c in data.get("items", [])], "No local contexts found.")


@local.command(name="list", help="List the local contexts.")
@output_options
def list_local(fmt: str) -> None:
    items = [describe(c) for c in store().contexts()]
    output.emit_data({"items": items}, fmt, print_local_contexts)


def print_status(item: dict[str, Any]) -> None:
    output.block("Local context", [
        ("Name", item["name"]), ("Type", item["type"]), ("Directory", item["root"]),
        ("Content revision", item["contentRevision"]),
        ("Current revision", item.get("currentRevision") or "<none>"),
        ("Changed", "yes" if item["changed"] else "no"), ("Files", item["files"]),
        ("Bytes", item["bytes"])])


@local.command(short_help="Show a local context's revision now and as last captured.",
               help="Show a local context: the revision of its files as they are now, its "
               "current (last captured) revision and whether they differ.")
@local_context
@output_options
def status(name: str, fmt: str) -> None:
    context = store().open(name)
    with context.reading():  # the files and the history as one command left them
        content = context.content()
        item = describe(context)
    item.update({"contentRevision": content.revision,
                 "changed": content.revision != item.get("currentRevision"),
                 "files": len(content.files), "bytes": content.bytes})
    output.emit_data(item, fmt, print_status)


@local.command(short_help="Capture the files as they are now as a revision.",
               help="Capture the files as they are now as a revision; unchanged files reuse "
               "the current revision (nothing is appended).")
@local_context
@click.option("--operation", default="capture", show_default=True,
              help="How the content was produced (sync, capture, derive...).")
@click.option("--producer", default="contextctl", show_default=True,
              help="The producing tool or harness.")
@click.option("--param", "params", multiple=True, metavar="KEY=VALUE",
              help="A generation parameter (repeatable).")
@click.option("--source", "sources", multiple=True, metavar="CONTEXT:TYPE:REVISION",
              help="A source context revision this one derives from (repeatable).")
@output_options
def capture(name: str, operation: str, producer: str, params: tuple[str, ...],
            sources: tuple[str, ...], fmt: str) -> None:
    entry, appended = store().open(name).publish(
        operation, producer, key_values(params, "--param"), source_refs(sources))
    output.emit_data({"appended": appended, "revision": entry}, fmt, lambda data: output.line(
        f"captured revision {data['revision']['id']} of {name} "
        f"({totals(data['revision']['files'], data['revision']['bytes'])})" if data["appended"] else
        f"{name} unchanged: revision {data['revision']['id']} is current"))


@local.command(help="List a local context's revisions, oldest first.")
@local_context
@output_options
def revisions(name: str, fmt: str) -> None:
    output.emit_data({"items": store().open(name).history()}, fmt, print_revisions)


@local.command(short_help="Print the query records of the files as they are now.",
               help=f"Print the query records of the files as they are now, one JSON object a "
               f"line: a memory context's from {MEMORY_FILE}, a knowledge context's from "
               f"{KNOWLEDGE_FILE}; other types have none.")
@local_context
def records(name: str) -> None:
    context = store().open(name)
    found = context.records()
    if found is None:
        raise click.ClickException(f"{name} has no records: {record_source(context)} does not "
                                   "exist")
    for record in found:
        output.dump(record, output.JSON)


@local.command(short_help="Query local memory and knowledge records.",
               help='Query the local memory and knowledge contexts as the service would: '
               'contextctl local query "release schedule".')
@query_arguments
@click.option("--limit", type=click.IntRange(1, 100), default=20, show_default=True,
              help="Results (1-100).")
@output_options
def query(text: str | None, ids: tuple[str, ...], contexts: tuple[str, ...],
          types: tuple[str, ...], source_contexts: tuple[str, ...],
          revisions: tuple[str, ...], limit: int, fmt: str) -> None:
    if not (text and text.strip()) and not ids:
        raise click.UsageError("query text or --id is required")
    local_store = store()
    items, unavailable = search(local_store, text or "", contexts, types, source_contexts,
                                revisions, ids, limit)
    data: dict[str, Any] = {"items": items}
    if unavailable:
        data["unavailable"] = unavailable
    missing = {name: record_source(local_store.open(name)) for name in unavailable}
    output.emit_data(data, fmt, lambda found: print_local_results(found, missing))


def record_source(context: LocalContext) -> str:
    """The file a context's query records come from (``records`` and ``query`` read it)."""
    return MEMORY_FILE if context.type == "memory" else KNOWLEDGE_FILE


def print_local_results(data: dict[str, Any], missing: dict[str, str]) -> None:
    """The results, then the contexts that could not be searched under their one local reason:
    their record source does not exist. The service's reason ("index does not match the current
    revision") never holds here, as the records are read from the files as they are now."""
    print_results({key: value for key, value in data.items() if key != "unavailable"})
    by_source: dict[str, list[str]] = {}
    for name in data.get("unavailable") or []:
        by_source.setdefault(missing[name], []).append(name)
    for source, names in by_source.items():
        output.note(f"unavailable ({source} does not exist): {', '.join(names)}")


def print_snapshot(s: dict[str, Any]) -> None:
    output.line(f"created snapshot {s['name']} of {s['contextName']} "
                f"({totals(s['files'], s['bytes'])})")


@local.command(help="Snapshot a local context's files as they are now.")
@local_context
@click.option("--name", "snapshot_name", default=None, metavar="SNAPSHOT",
              help="The snapshot's name (default snapshot-<UTC time>).")
@click.option("--protect", is_flag=True, help="Mark the snapshot protected.")
@click.option("--label", "labels", multiple=True, metavar="KEY=VALUE", help="Repeatable.")
@output_options
def snapshot(name: str, snapshot_name: str | None, protect: bool, labels: tuple[str, ...],
             fmt: str) -> None:
    taken = store().open(name).snapshot(snapshot_name, protected=protect,
                                        labels=key_values(labels, "--label"))
    output.emit_data(taken, fmt, print_snapshot)


def print_snapshots(data: dict[str, Any]) -> None:
    output.table(["NAME", "REVISION", "CONTENT", "FILES", "BYTES", "CREATED", "PROTECTED",
                  "LABELS"], [
        [s.get("name"), short(s.get("revision")), short(s.get("contentRevision")),
         s.get("files"), s.get("bytes"), s.get("createdAt"), s.get("protected", False),
         ",".join(f"{k}={v}" for k, v in (s.get("labels") or {}).items())]
        for s in data.get("items", [])], "No snapshots found.")


@local.command(help="List a local context's snapshots, oldest first.")
@local_context
@output_options
def snapshots(name: str, fmt: str) -> None:
    output.emit_data({"items": store().open(name).snapshots()}, fmt, print_snapshots)


@local.command(help="Restore a local context's files from a snapshot, in place. The files as "
               "they are first go into a protected safety snapshot; the restored files are "
               "captured as a revision (operation restore).")
@local_context
@click.argument("snapshot_name", metavar="SNAPSHOT")
@output_options
def restore(name: str, snapshot_name: str, fmt: str) -> None:
    done = store().open(name).restore(snapshot_name)
    output.emit_data(done, fmt, lambda d: output.line(
        f"restored {name} from {d['restored']} (revision {d['revision']}); the previous files "
        f"are in snapshot {d['safetySnapshot']}"))

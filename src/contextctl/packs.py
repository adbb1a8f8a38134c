"""``agent pack`` and ``agent replay``: a context pack for a task, and the replays of a released
pack, over the Agent Context API with the credential in ``CS_AGENT_TOKEN``."""

from __future__ import annotations

import dataclasses
import json
from typing import Any, TypeVar, cast

import click
import msgspec

from context_service.client import routes
from context_service.contextctl import agent_api, output
from context_service.contextctl.options import App, output_options, pass_app
from context_service.contract import agent as c

SOURCES = ("passages", "graph", "documents")
PREVIEW = 72
DEFAULT_LATENCY_MS = 15_000  # the service's deadline when the request names none
AFTER_DEADLINE = 10.0  # seconds: packing and answering after retrieval's deadline


def preview(text: Any) -> str:
    """The first line of an item's text, cut for a table cell."""
    first = str(text or "").split("\n", 1)[0]
    return first if len(first) <= PREVIEW else first[:PREVIEW - 1] + "…"


def print_items(items: list[c.PackItem]) -> None:
    output.table(["#", "ID", "CLASS", "TRUST", "TOKENS", "SCORE", "FLAGS", "TEXT"], [
        [n, i.id, i.class_, i.trust, i.tokens, agent_api.score(i.score), _flags(i),
         preview(i.text)]
        for n, i in enumerate(items, 1)], "No items fitted.")


def _flags(item: c.PackItem) -> str:
    flags = []
    status = item.validity.status if item.validity else None
    if status and status not in ("valid", "unknown"):
        flags.append(status)
    if item.superseded:
        flags.append("superseded")
    if item.contradiction:
        flags.append("contradiction")
    return ",".join(flags)


def _missing(entries: list[c.MissingEntry]) -> str:
    def one(m: c.MissingEntry) -> str:
        identity = m.id or m.collection_id or m.document_id
        return " ".join(str(p) for p in (m.kind, identity) if p) + f" ({m.reason})"

    return ", ".join(one(m) for m in entries) or "-"


def print_pack(pack: c.ContextPack | c.RecomputedPack) -> None:
    as_of, budget, omitted = pack.as_of, pack.budget, pack.omitted
    released = pack if isinstance(pack, c.ContextPack) else None  # a recomputed one is not
    output.block("Context pack", [
        ("Pack", pack.pack_id), ("Replay", released.replay_id if released else None),
        ("Valid time", as_of.valid_time), ("System time", as_of.system_time),
        ("Position", as_of.position),
        ("Tokens", f"{budget.used_tokens} of {budget.max_tokens}"),
        ("Complete", pack.complete), ("Missing", _missing(pack.missing)),
        ("Omitted", f"budget {omitted.budget.count}, duplicate {omitted.duplicate.count}, "
                    f"access {omitted.access.count}"),
        ("Merkle root", pack.receipt.merkle_root),
        ("Expires", released.expires_at if released else None)])
    output.line()
    print_items(pack.items)


def from_stream(raw: bytes) -> c.ContextPack:
    """The ndjson lines of ``/context-packs/stream`` put back together as one pack."""
    header: c.HeaderLine | None = None
    items: list[c.PackItem] = []
    for text in raw.splitlines():
        entry = routes.line(text)
        if entry is None:  # a line of a type a later version added
            continue
        if isinstance(entry, c.ErrorLine):
            raise click.ClickException(f"the stream failed: {entry.message}")
        if isinstance(entry, c.HeaderLine):
            header = entry
        elif isinstance(entry, c.ItemLine):
            items.append(entry.item)
        elif isinstance(entry, c.FooterLine) and header is not None:
            return c.ContextPack(
                pack_id=header.pack_id, replay_id=header.replay_id, task="",
                as_of=header.as_of, budget=c.PackBudget(
                    max_tokens=header.budget.max_tokens, used_tokens=entry.used_tokens,
                    coverage=header.budget.coverage), complete=entry.complete, items=items,
                omitted=entry.omitted, missing=entry.missing, receipt=entry.receipt,
                expires_at=entry.expires_at)
    raise click.ClickException("the stream ended before its footer")


@click.command(short_help="A context pack for a task (agent API).",
               help="Assemble a ranked, deduplicated, cited pack of evidence for TASK within a "
               "token budget, and record it as a replay (agent API, CS_AGENT_TOKEN).")
@click.argument("task")
@click.option("--max-tokens", type=click.IntRange(256, 32000), default=None, metavar="N",
              help="Token budget, 256 to 32000 (default 4000).")
@click.option("--max-latency-ms", type=click.IntRange(1000, 60000), default=None, metavar="MS",
              help="Latency deadline, 1000 to 60000 (default 15000).")
@click.option("--require-complete", is_flag=True,
              help="Refuse an incomplete pack (422) instead of releasing what fitted.")
@click.option("--valid-time", default=None, metavar="TIME",
              help="Judge record validity at this RFC 3339 time (default: now).")
@click.option("--system-time", default=None, metavar="TIME",
              help="Read the log as it was at this RFC 3339 time (default: now).")
@click.option("--collection", "collections", multiple=True, metavar="NAME",
              help="Only these collections (repeatable, at most 8).")
@click.option("--document", "documents", multiple=True, metavar="ID",
              help="Only these documents, <collection>/<file> (repeatable, at most 20).")
@click.option("--source", "sources", multiple=True, type=click.Choice(SOURCES),
              help="Item kinds to include (repeatable; default all three).")
@click.option("--lexical", is_flag=True, help="BM25 only (default: hybrid).")
@click.option("--set", "--context-set", "set_id", default=None, metavar="ID",
              help="Pack within this context set.")
@click.option("--stream", is_flag=True, help="Read the ndjson stream route instead.")
@output_options
@pass_app
def pack(app: App, task: str, max_tokens: int | None, max_latency_ms: int | None,
         require_complete: bool, valid_time: str | None, system_time: str | None,
         collections: tuple[str, ...], documents: tuple[str, ...], sources: tuple[str, ...],
         lexical: bool, set_id: str | None, stream: bool, fmt: str) -> None:
    request = c.PackRequest(
        task=task, retrieval="lexical" if lexical else None, context_set_id=set_id,
        budget=_given(c.Budget(max_tokens=max_tokens, max_latency_ms=max_latency_ms,
                               coverage="require_complete" if require_complete else None)),
        as_of=_given(c.AsOf(valid_time=valid_time or None, system_time=system_time or None)),
        filters=_given(c.Filters(collection_ids=list(collections) or None,
                                 document_ids=list(documents) or None,
                                 sources=list(sources) or None)))
    app = waiting(app, max_latency_ms)
    if not stream:
        agent_api.emit(agent_api.ask(app, routes.PACKS, request, c.ContextPack), fmt,
                       print_pack)
        return
    raw = agent_api.ask_raw(app, routes.STREAM, request)
    if fmt == output.JSON:
        click.echo(raw.decode(), nl=False)  # the lines as they came, a last error line too
        _stream_data(raw)  # then exit 1 when they end in an error or stop before the footer
    elif fmt == output.YAML:
        output.dump(_stream_data(raw), fmt)
    else:
        print_pack(from_stream(raw))


def waiting(app: App, max_latency_ms: int | None) -> App:
    """The invocation with a time limit no shorter than the pack's latency deadline (up to 60
    s) and the packing after it: the service may take that long before it answers."""
    needed = (max_latency_ms or DEFAULT_LATENCY_MS) / 1000 + AFTER_DEADLINE
    if needed <= app.settings.timeout:
        return app
    return App(dataclasses.replace(app.settings, timeout=needed), app.user_agent)


S = TypeVar("S", bound=msgspec.Struct)


def _given(part: S) -> S | None:
    """A part of the request with at least one option given, else nothing to send."""
    return part if msgspec.structs.asdict(part) != msgspec.structs.asdict(type(part)()) \
        else None


def _stream_data(raw: bytes) -> dict[str, Any]:
    """The stream's lines as one JSON object, the service's own keys and values."""
    pack: dict[str, Any] = {"items": []}
    for text in raw.decode().splitlines():
        entry = json.loads(text)
        kind = entry.pop("type")
        if kind == "item":
            pack["items"].append(entry["item"])
        elif kind == "error":
            raise click.ClickException(f"the stream failed: {entry.get('message')}")
        elif kind == "header":
            pack.update(entry)
        elif kind == "footer":
            pack["budget"] = {**pack.get("budget", {}), "usedTokens": entry.pop("usedTokens")}
            pack.update(entry)
            return pack
        # a line of a type a later version added is skipped
    raise click.ClickException("the stream ended before its footer")


def print_verification(data: c.Verification) -> None:
    summary = data.summary
    output.block("Replay verified", [
        ("Replay", data.replay_id), ("Position", data.position),
        ("Unchanged", summary.unchanged), ("Changed", summary.changed),
        ("Unavailable", summary.unavailable), ("Matches", data.matches),
        ("Merkle root", data.merkle_root), ("Current root", data.current_merkle_root)])
    output.line()
    output.table(["ID", "STATUS"], [[i.id, i.status] for i in data.items], "No items.")


def print_recomputation(data: c.Recomputation) -> None:
    d, engine = data.diff, data.engine_version
    output.block("Replay recomputed", [
        ("Replay", data.replay_id), ("Engine", f"{engine.recorded} -> {engine.current}"),
        ("Unchanged", d.unchanged), ("Added", d.added or "-"), ("Removed", d.removed or "-"),
        ("Changed", d.changed or "-")])
    output.line()
    print_pack(data.pack)


def print_replay(data: c.Verification | c.Recomputation) -> None:
    if isinstance(data, c.Verification):
        print_verification(data)
    else:
        print_recomputation(data)


@click.command(short_help="Verify or recompute a released pack (agent API).",
               help="Replay a released pack: 'verify' compares each recorded item with what its "
               "source says now; 'recompute' rebuilds the pack at its recorded position (needs "
               "--task, the original task) and shows the diff (agent API, CS_AGENT_TOKEN).")
@click.argument("replay_id")
@click.argument("mode", type=click.Choice(("verify", "recompute")))
@click.option("--task", default=None, help="The pack's original task (recompute).")
@output_options
@pass_app
def replay(app: App, replay_id: str, mode: str, task: str | None, fmt: str) -> None:
    body = c.ReplayRequest(mode=mode, task=task)
    replayed = cast(type[c.Verification | c.Recomputation], c.Replay)  # a tagged union
    agent_api.emit(agent_api.ask(app, routes.replay(replay_id), body, replayed), fmt,
                   print_replay)


COMMANDS = (pack, replay)

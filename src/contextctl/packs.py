"""``agent pack`` and ``agent replay``: a context pack for a task, and the replays of a released
pack, over the Agent Context API with the credential in ``CS_AGENT_TOKEN``."""

from __future__ import annotations

import json
from typing import Any

import click

from context_service.contextctl import output
from context_service.contextctl.client import segment
from context_service.contextctl.context_sets import AGENT
from context_service.contextctl.options import App, output_options, pass_app

SOURCES = ("passages", "graph", "documents")
PREVIEW = 72


def preview(text: Any) -> str:
    """The first line of an item's text, cut for a table cell."""
    first = str(text or "").split("\n", 1)[0]
    return first if len(first) <= PREVIEW else first[:PREVIEW - 1] + "…"


def print_items(items: list[dict[str, Any]]) -> None:
    output.table(["#", "ID", "CLASS", "TRUST", "TOKENS", "SCORE", "FLAGS", "TEXT"], [
        [n, i.get("id"), i.get("class"), i.get("trust"), i.get("tokens"), i.get("score"),
         _flags(i), preview(i.get("text"))] for n, i in enumerate(items, 1)],
        "No items fitted.")


def _flags(item: dict[str, Any]) -> str:
    flags = []
    status = (item.get("validity") or {}).get("status")
    if status and status not in ("valid", "unknown"):
        flags.append(status)
    if item.get("superseded"):
        flags.append("superseded")
    if item.get("contradiction"):
        flags.append("contradiction")
    return ",".join(flags)


def _missing(entries: list[dict[str, Any]]) -> str:
    def one(m: dict[str, Any]) -> str:
        identity = m.get("id") or m.get("collectionId") or m.get("documentId")
        return " ".join(str(p) for p in (m.get("kind"), identity) if p) + f" ({m.get('reason')})"

    return ", ".join(one(m) for m in entries) or "-"


def print_pack(pack: dict[str, Any]) -> None:
    as_of, budget, omitted = pack.get("asOf", {}), pack.get("budget", {}), pack.get("omitted", {})
    output.block("Context pack", [
        ("Pack", pack.get("packId")), ("Replay", pack.get("replayId")),
        ("Valid time", as_of.get("validTime")), ("System time", as_of.get("systemTime")),
        ("Position", as_of.get("position")),
        ("Tokens", f"{budget.get('usedTokens')} of {budget.get('maxTokens')}"),
        ("Complete", pack.get("complete")), ("Missing", _missing(pack.get("missing", []))),
        ("Omitted", f"budget {omitted.get('budget', {}).get('count', 0)}, duplicate "
                    f"{omitted.get('duplicate', {}).get('count', 0)}, access "
                    f"{omitted.get('access', {}).get('count', 0)}"),
        ("Merkle root", (pack.get("receipt") or {}).get("merkleRoot")),
        ("Expires", pack.get("expiresAt"))])
    output.line()
    print_items(pack.get("items", []))


def from_stream(raw: bytes) -> dict[str, Any]:
    """The ndjson lines of ``/context-packs/stream`` put back together as one pack."""
    pack: dict[str, Any] = {"items": []}
    for text in raw.decode().splitlines():
        entry = json.loads(text)
        kind = entry.pop("type")
        if kind == "item":
            pack["items"].append(entry["item"])
        elif kind == "error":
            raise click.ClickException(f"the stream failed: {entry.get('message')}")
        elif kind == "footer":
            pack["budget"] = {**pack.get("budget", {}), "usedTokens": entry.pop("usedTokens")}
            pack.update(entry)
        else:
            pack.update(entry)
    return pack


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
    body: dict[str, Any] = {"task": task}
    budget = {k: v for k, v in (("maxTokens", max_tokens), ("maxLatencyMs", max_latency_ms),
                                ("coverage", "require_complete" if require_complete else None))
              if v is not None}
    if budget:
        body["budget"] = budget
    as_of = {k: v for k, v in (("validTime", valid_time), ("systemTime", system_time)) if v}
    if as_of:
        body["asOf"] = as_of
    filters = {k: list(v) for k, v in (("collectionIds", collections),
                                        ("documentIds", documents), ("sources", sources)) if v}
    if filters:
        body["filters"] = filters
    if lexical:
        body["retrieval"] = "lexical"
    if set_id is not None:
        body["contextSetId"] = set_id
    route = f"{AGENT}/context-packs" + ("/stream" if stream else "")
    reply = app.client.post(route, body, agent=True)
    if stream and fmt == output.JSON:
        click.echo(reply.raw.decode(), nl=False)
    elif stream:
        output.emit_data(from_stream(reply.raw), fmt, print_pack)
    else:
        output.emit(reply, fmt, print_pack)


def print_verification(data: dict[str, Any]) -> None:
    summary = data.get("summary", {})
    output.block("Replay verified", [
        ("Replay", data.get("replayId")), ("Position", data.get("position")),
        ("Unchanged", summary.get("unchanged")), ("Changed", summary.get("changed")),
        ("Unavailable", summary.get("unavailable")), ("Matches", data.get("matches")),
        ("Merkle root", data.get("merkleRoot")),
        ("Current root", data.get("currentMerkleRoot"))])
    output.line()
    output.table(["ID", "STATUS"], [[i.get("id"), i.get("status")]
                                    for i in data.get("items", [])], "No items.")


def print_recomputation(data: dict[str, Any]) -> None:
    d, engine = data.get("diff", {}), data.get("engineVersion", {})
    output.block("Replay recomputed", [
        ("Replay", data.get("replayId")),
        ("Engine", f"{engine.get('recorded')} -> {engine.get('current')}"),
        ("Unchanged", d.get("unchanged")), ("Added", d.get("added") or "-"),
        ("Removed", d.get("removed") or "-"), ("Changed", d.get("changed") or "-")])
    output.line()
    print_pack(data.get("pack", {}))


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
    body: dict[str, Any] = {"mode": mode}
    if task is not None:
        body["task"] = task
    reply = app.client.post(f"{AGENT}/replays/{segment(replay_id)}", body, agent=True)
    output.emit(reply, fmt, print_verification if mode == "verify" else print_recomputation)


COMMANDS = (pack, replay)

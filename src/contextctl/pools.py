"""Sandbox pools and storage classes: the original tool's top-level commands (``health``,
``create``, ``get``, ``ls``, ``wait``, ``rm``/``delete``), their text formats and messages."""

from __future__ import annotations

import time
from typing import Any

import click

from context_service.contextctl import complete, output
from context_service.contextctl.client import CommandError, ServiceError, segment
from context_service.contextctl.options import App, Duration, group, output_options, pass_app

POOLS = "/v1/sandbox-pools"
POLL_SECONDS = 2.0
SHORT_MODES = {"ReadWriteMany": "RWX", "ReadWriteOnce": "RWO"}


def workspace_summary(pool: dict[str, Any]) -> str:
    if pool.get("warmPoolRef"):
        return f"warm pool {pool['warmPoolRef']}"
    workspace = pool.get("workspace") or {}
    mode = str(workspace.get("accessMode", ""))
    return f"{workspace.get('size', '')} {SHORT_MODES.get(mode, mode)}"


def summary(pool: dict[str, Any]) -> str:
    """``demo: ready (2/2 ready), 1Gi RWX, selector context.rossoctl.io/pool=demo``."""
    return (f"{pool.get('name')}: {pool.get('status')} ({pool.get('readyReplicas')}/"
            f"{pool.get('replicas')} ready), {workspace_summary(pool)}, "
            f"selector {pool.get('sandboxSelector')}")


def progress(pool: dict[str, Any]) -> str:
    return (f"{pool.get('name')}: {pool.get('status')} ({pool.get('readyReplicas')}/"
            f"{pool.get('replicas')} ready)")


def print_pool(pool: dict[str, Any]) -> None:
    output.line(summary(pool))


def print_pools(data: dict[str, Any]) -> None:
    output.table(["NAME", "STATUS", "READY", "WORKSPACE", "SELECTOR"], [
        [p.get("name"), p.get("status"), f"{p.get('readyReplicas')}/{p.get('replicas')}",
         workspace_summary(p), p.get("sandboxSelector")] for p in data.get("items", [])],
        "No sandbox pools found.")


@click.command(help="Check that the service answers and says it is healthy.")
@pass_app
def health(app: App) -> None:
    reply = app.client.get("/healthz")
    if not healthy(reply.data):
        raise CommandError(f"the context service at {reply.url} is not healthy: /healthz "
                           f"answered {_shown(reply.raw)}")
    output.line("ok")


def healthy(answer: Any) -> bool:
    """``/healthz`` says the process serves (spec 1.3: ``{"status":"ok"}``; keys a later version
    adds are read past). A 200 alone is not enough: a proxy or another web server at ``CS_URL``
    answers 200 too."""
    return isinstance(answer, dict) and answer.get("status") == "ok"


def _shown(raw: bytes, limit: int = 200) -> str:
    """The answer on the one line of the message, cut short."""
    text = " ".join(raw.decode(errors="replace").split())
    return text if len(text) <= limit else text[:limit] + "..."


# Options --warm-pool refuses, in the order they are reported.
WARM_POOL_CONFLICTS = ("sandbox_profile", "shared", "claim", "read_only", "read_write",
                       "workspace_size", "storage_class")
CLAIM_CONFLICTS = ("shared", "workspace_size", "storage_class")


def _flag(param: str) -> str:
    return "--" + param.replace("_", "-")


@click.command(short_help="Create a sandbox pool.",
               help="Create a sandbox pool: one sandbox with a 1Gi RWO workspace by default; "
               "--shared gives two sandboxes on one RWX workspace.")
@click.argument("name")
@click.option("-n", "--replicas", type=int, default=None,
              help="Number of sandboxes (default 1, or 2 with --shared).")
@click.option("-s", "--workspace-size", default=None, metavar="SIZE",
              help="Workspace size (default 1Gi).")
@click.option("-c", "--storage-class", default=None, metavar="NAME",
              help="Storage class (default CS_STORAGE_CLASS).")
@click.option("--shared", is_flag=True, help="One RWX workspace shared by all sandboxes.")
@click.option("--claim", default=None, metavar="PVC",
              help="Mount an existing PVC (never deleted by the service).")
@click.option("--read-only", is_flag=True, help="Mount the --claim read-only.")
@click.option("--read-write", is_flag=True, help="Mount the --claim read-write.")
@click.option("--warm-pool", default=None, metavar="NAME",
              help="Claim ready sandboxes from an existing SandboxWarmPool.")
@click.option("--sandbox-profile", default=None, metavar="TEMPLATE",
              help="A platform SandboxTemplate to copy the runtime from.")
@output_options
@pass_app
def create(app: App, name: str, replicas: int | None, workspace_size: str | None,
           storage_class: str | None, shared: bool, claim: str | None, read_only: bool,
           read_write: bool, warm_pool: str | None, sandbox_profile: str | None,
           fmt: str) -> None:
    set_options = {"sandbox_profile": sandbox_profile is not None, "shared": shared,
                   "claim": claim is not None, "read_only": read_only, "read_write": read_write,
                   "workspace_size": workspace_size is not None,
                   "storage_class": storage_class is not None}
    given = {option for option, present in set_options.items() if present}
    body: dict[str, Any] = {"name": name, "replicas": replicas or (2 if shared else 1)}
    if sandbox_profile:
        body["sandboxProfile"] = sandbox_profile
    if warm_pool is not None:
        for option in WARM_POOL_CONFLICTS:
            if option in given:
                raise click.UsageError(f"--warm-pool cannot be combined with {_flag(option)}")
        body["warmPoolRef"] = warm_pool
        body["workspace"] = {}
    elif claim is not None:
        for option in CLAIM_CONFLICTS:
            if option in given:
                raise click.UsageError(f"--claim cannot be combined with {_flag(option)}")
        if read_only == read_write:
            raise click.UsageError("--claim requires exactly one of --read-only or --read-write")
        body["workspace"] = {"claimName": claim, "readOnly": read_only}
    elif read_only or read_write:
        raise click.UsageError("--read-only and --read-write require --claim")
    else:
        workspace = {"size": workspace_size or "1Gi",
                     "accessMode": "ReadWriteMany" if shared else "ReadWriteOnce"}
        chosen = app.settings.storage_class if storage_class is None else storage_class
        if chosen:
            workspace["storageClass"] = chosen
        body["workspace"] = workspace
    output.emit(app.client.post(POOLS, body), fmt, print_pool)


@click.command(help="Show a sandbox pool.")
@click.argument("name", shell_complete=complete.pools)
@output_options
@pass_app
def get(app: App, name: str, fmt: str) -> None:
    output.emit(app.client.get(f"{POOLS}/{segment(name)}"), fmt, print_pool)


@click.command(name="list", help="List sandbox pools.")
@output_options
@pass_app
def list_pools(app: App, fmt: str) -> None:
    output.emit(app.client.get(POOLS), fmt, print_pools)


@click.command(help="Wait until every sandbox of the pool is ready (polls every 2 s).",
               short_help="Wait until every sandbox of the pool is ready.")
@click.argument("name", shell_complete=complete.pools)
@click.option("-t", "--timeout", type=Duration(), default="2m", show_default=True,
              help="How long to wait (90s, 2m, 1m30s).")
@pass_app
def wait(app: App, name: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while True:
        pool = app.client.get(f"{POOLS}/{segment(name)}").data
        output.line(progress(pool))
        if pool.get("status") == "ready":
            return
        remaining = deadline - time.monotonic()
        if remaining <= POLL_SECONDS:
            time.sleep(max(remaining, 0))
            raise ServiceError(f"timed out waiting for {name}")
        time.sleep(POLL_SECONDS)


@click.command(help="Release a sandbox pool (its sandboxes and managed workspace).",
               short_help="Release a sandbox pool and its sandboxes.")
@click.argument("name", shell_complete=complete.pools)
@pass_app
def delete(app: App, name: str) -> None:
    app.client.delete(f"{POOLS}/{segment(name)}")
    output.line(f"deleted {name}")


def print_storage_classes(data: dict[str, Any]) -> None:
    output.table(["NAME", "DEFAULT", "PROVISIONER", "BINDING MODE", "EXPANSION"], [
        [c.get("name"), c.get("default"), c.get("provisioner"), c.get("volumeBindingMode"),
         c.get("allowVolumeExpansion")] for c in data.get("items", [])],
        "No storage classes found.")


@click.command(name="list", help="List the storage classes contexts and pools can use.")
@output_options
@pass_app
def list_storage_classes(app: App, fmt: str) -> None:
    output.emit(app.client.get("/v1/storage-classes"), fmt, print_storage_classes)


TOP_LEVEL = (health, create, get, list_pools, wait, delete)
ALIASES = {"ls": "list", "rm": "delete"}

sandbox_pool = group("sandbox-pool", "The pool commands above, as a group.",
                     aliases=ALIASES)
for _command in (create, get, list_pools, wait, delete):
    sandbox_pool.add_command(_command)

storage_class = group("storage-class", "Storage classes of the cluster.", aliases={"ls": "list"})
storage_class.add_command(list_storage_classes)

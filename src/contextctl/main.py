"""The ``contextctl`` entry point: the root group, ``help``, ``--version``, and the mapping of
outcomes to exit codes (0 success, 1 service error, 2 usage error)."""

from __future__ import annotations

import sys
from importlib.metadata import PackageNotFoundError, version

import click

from context_service.contextctl import (
    access,
    agent,
    completion,
    contexts,
    history,
    index,
    ingest,
    local_commands,
    mcp,
    pools,
    query,
    snapshots,
    sync,
)
from context_service.contextctl.client import CommandError
from context_service.contextctl.options import AliasedGroup, App
from context_service.contextctl.settings import Settings

DISTRIBUTION = "context-service"
ENVIRONMENT = """\b
Environment:
  CS_URL            service URL (default http://localhost:8080)
  CS_TOKEN          gateway token, sent as X-SH-Auth
  CS_SUBJECT        caller, sent as X-Context-Subject (kind:name)
  CS_NAMESPACE      namespace of context commands (default serverless-harness)
  CS_STORAGE_CLASS  default storage class of create commands
  CS_AGENT_TOKEN    agent credential (bdk_...) for the agent API
  CS_CONTEXT_HOME   local contexts of the local commands (default ~/.contexts)
  CS_S3_ENDPOINT    S3 endpoint of ctx sync push --to s3://... (default AWS)
  CS_S3_REGION      its region (default AWS_REGION, else us-east-1)
"""


def distribution_version() -> str:
    try:
        return version(DISTRIBUTION)
    except PackageNotFoundError:
        return "unknown"


@click.group(cls=AliasedGroup, aliases={**pools.ALIASES, "context": "ctx", "sb": "sandbox-pool",
                                        "sc": "storage-class"},
             context_settings={"help_option_names": ["-h", "--help"]}, epilog=ENVIRONMENT,
             invoke_without_command=True)
@click.version_option(distribution_version(), "--version", prog_name="contextctl",
                      message="%(prog)s %(version)s")
@click.pass_context
def cli(ctx: click.Context) -> None:
    """contextctl manages Context Service resources: sandbox pools, contexts, query indexes,
    snapshots, history and agent access."""
    if ctx.invoked_subcommand is None:
        click.echo(ctx.get_help())  # the original tool's answer to no arguments, exit 0
        return
    app = App(Settings.from_env(), user_agent=f"contextctl/{distribution_version()}")
    ctx.obj = app
    ctx.call_on_close(app.close)


@click.command(name="help", help="Show help for a command: contextctl help ctx grant.")
@click.argument("command", nargs=-1)
@click.pass_context
def help_command(ctx: click.Context, command: tuple[str, ...]) -> None:
    parent = ctx.find_root()
    target: click.Command = parent.command
    current = parent
    for word in command:
        if not isinstance(target, click.Group):
            raise click.UsageError(f"{target.name} has no command {word!r}")
        found = target.get_command(current, word)
        if found is None:
            raise click.UsageError(f"unknown command {' '.join(command)!r}")
        current = click.Context(found, info_name=found.name, parent=current)
        target = found
    click.echo(target.get_help(current))


for _command in (*pools.TOP_LEVEL, pools.storage_class, pools.sandbox_pool, contexts.ctx,
                 index.group_, ingest.ingest_command, query.query, snapshots.snapshot,
                 history.history, local_commands.local, agent.agent, mcp.mcp_command,
                 completion.completion):
    cli.add_command(_command)
for _command in (access.grants, *access.COMMANDS, sync.sync):
    contexts.ctx.add_command(_command)
cli.add_command(help_command)  # last in the listing


def main(argv: list[str] | None = None) -> int:
    """Run one command; returns the exit code instead of exiting (tests call this)."""
    args = sys.argv[1:] if argv is None else argv
    try:
        returned = cli.main(args=args, prog_name="contextctl", standalone_mode=False)
    except click.exceptions.NoArgsIsHelpError as exc:
        click.echo(exc.format_message(), err=True)  # a group without its command
        return 2
    except click.UsageError as exc:
        click.echo(f"contextctl: {exc.format_message()}", err=True)
        if exc.ctx is not None:
            click.echo(f"Run '{exc.ctx.command_path} --help' for usage.", err=True)
        return 2
    except CommandError as exc:
        click.echo(f"contextctl: {exc}", err=True)
        return 1
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except click.Abort:
        click.echo("contextctl: interrupted", err=True)
        return 130
    except click.ClickException as exc:
        click.echo(f"contextctl: {exc.format_message()}", err=True)
        return 1
    return returned if isinstance(returned, int) else 0


def run() -> None:
    sys.exit(main())

"""``completion bash|zsh``: the shell script that completes commands, options and, by asking
the service, pool and context names."""

from __future__ import annotations

import click
from click.shell_completion import get_completion_class

PROG = "contextctl"
COMPLETE_VAR = "_CONTEXTCTL_COMPLETE"


@click.command(short_help="Print the bash or zsh completion script.",
               help="Print the completion script: eval \"$(contextctl completion bash)\" "
               "(bash) or eval \"$(contextctl completion zsh)\" (zsh).")
@click.argument("shell", type=click.Choice(["bash", "zsh"]))
@click.pass_context
def completion(ctx: click.Context, shell: str) -> None:
    completer = get_completion_class(shell)
    assert completer is not None  # both choices are built into click
    root = ctx.find_root().command
    click.echo(completer(root, {}, PROG, COMPLETE_VAR).source())

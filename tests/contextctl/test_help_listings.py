"""Every group's listing of commands (``contextctl --help``, ``contextctl ctx --help``, ...)
gives each command one whole line: a short help cut to "..." or wrapped onto a second line
is what a new reader of the listing stumbles on first."""

from __future__ import annotations

import click
import pytest
from click.testing import CliRunner

from context_service.contextctl.main import cli

WIDTH = 80  # click never lays help out wider than this, so a wider terminal shows the same


def groups(group: click.Group, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """The path of every group under ``group``, itself first."""
    found = [path]
    context = click.Context(group)
    for name in group.list_commands(context):
        command = group.get_command(context, name)
        if isinstance(command, click.Group):
            found.extend(groups(command, (*path, name)))
    return found


def listing(path: tuple[str, ...]) -> list[str]:
    """The lines of the group's "Commands:" section, as laid out on the widest terminal."""
    result = CliRunner().invoke(cli, [*path, "--help"], terminal_width=WIDTH)
    assert result.exit_code == 0, result.output
    section = result.output.split("\nCommands:\n", 1)[1]
    return section.split("\n\n", 1)[0].splitlines()


GROUPS = groups(cli)


def test_the_walk_finds_the_groups_a_reader_opens() -> None:
    assert {(), ("ctx",), ("ctx", "sync"), ("agent",), ("local",), ("snapshot",),
            ("agent", "members")} <= set(GROUPS)


@pytest.mark.parametrize("path", GROUPS, ids=lambda p: " ".join(p) or "contextctl")
def test_each_command_has_one_whole_line(path: tuple[str, ...]) -> None:
    lines = listing(path)
    group = cli
    for name in path:
        found = group.get_command(click.Context(group), name)
        assert isinstance(found, click.Group)
        group = found
    assert len(lines) == len(group.list_commands(click.Context(group)))
    for line in lines:
        assert not line.startswith("   "), f"a short help wraps: {line.strip()!r}"
        assert not line.rstrip().endswith("..."), f"a short help is cut: {line.strip()!r}"
        assert len(line.split(None, 1)) == 2, f"a command without a short help: {line!r}"

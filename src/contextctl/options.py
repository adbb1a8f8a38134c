"""What every command group shares: the invocation's state (settings and one HTTP client),
aliased groups, the output and namespace options, and argument parsers (subjects, durations)."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any, TypeVar

import click

from context_service.contextctl import output
from context_service.contextctl.client import Client
from context_service.contextctl.settings import Settings

F = TypeVar("F", bound=Callable[..., Any])
SUBJECT_KINDS = ("user", "agent", "workload", "service")


class App:
    """One invocation: its settings and, created on first use, its HTTP client."""

    def __init__(self, settings: Settings, user_agent: str = "contextctl") -> None:
        self.settings = settings
        self.user_agent = user_agent
        self._client: Client | None = None

    @property
    def client(self) -> Client:
        if self._client is None:
            self._client = Client(self.settings, user_agent=self.user_agent)
        return self._client

    def namespace(self, given: str | None) -> str:
        return given or self.settings.namespace

    def close(self) -> None:
        if self._client is not None:
            self._client.close()


pass_app = click.make_pass_decorator(App)


class AliasedGroup(click.Group):
    """A group whose commands also answer to short names (``rm`` for ``delete``, ``ls``)."""

    def __init__(self, *args: Any, aliases: dict[str, str] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.aliases = dict(aliases or {})

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(self.commands)  # in the order they were added: the order of the help

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        return super().get_command(ctx, self.aliases.get(cmd_name, cmd_name))

    def resolve_command(self, ctx: click.Context,
                        args: list[str]) -> tuple[str | None, click.Command | None, list[str]]:
        _, command, rest = super().resolve_command(ctx, args)
        return (command.name if command else None), command, rest

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = []
        for name in self.list_commands(ctx):
            command = self.get_command(ctx, name)
            if command is None or command.hidden:
                continue
            also = [a for a, target in self.aliases.items() if target == name]
            label = name + (f" ({', '.join(also)})" if also else "")
            rows.append((label, command.get_short_help_str(limit=70)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


def group(name: str, help_text: str, aliases: dict[str, str] | None = None) -> AliasedGroup:
    return AliasedGroup(name=name, help=help_text, aliases=aliases,
                        context_settings={"help_option_names": ["-h", "--help"]})


def output_options(func: F) -> F:
    """``--json`` (the service's JSON as is) and ``-o text|json|yaml``; passes ``fmt``."""

    @click.option("--json", "as_json", is_flag=True, help="Print the service's JSON as is.")
    @click.option("-o", "--output", "output_format", type=click.Choice(
        [output.TEXT, output.JSON, output.YAML]), default=None, help="Output format.")
    @functools.wraps(func)
    def wrapper(*args: Any, as_json: bool, output_format: str | None, **kwargs: Any) -> Any:
        if as_json and output_format not in (None, output.JSON):
            raise click.UsageError("--json cannot be combined with -o " + str(output_format))
        fmt = output.JSON if as_json else (output_format or output.TEXT)
        return func(*args, fmt=fmt, **kwargs)

    return wrapper  # type: ignore[return-value]


def namespace_option(func: F) -> F:
    return click.option("-n", "--namespace", default=None, metavar="NS",
                        help="Namespace (default: CS_NAMESPACE or serverless-harness).")(func)


def parse_subject(text: str, what: str = "subject") -> dict[str, str]:
    """``kind:name`` (split at the first ``:``) as the body's ``{"kind","name"}``."""
    kind, sep, name = text.partition(":")
    if not sep or kind not in SUBJECT_KINDS or not name.strip():
        raise click.BadParameter(
            f"{text!r} is not kind:name with kind user, agent, workload or service",
            param_hint=what)
    return {"kind": kind, "name": name}


_DURATION = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)")
_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0,
          "h": 3600.0}


def parse_duration(text: str) -> float:
    """A Go-style duration (``2m``, ``90s``, ``1m30s``, ``500ms``, ``0``) in seconds."""
    if text == "0":
        return 0.0
    position, total = 0, 0.0
    while position < len(text):
        found = _DURATION.match(text, position)
        if found is None:
            raise click.BadParameter(f"{text!r} is not a duration such as 90s, 2m or 1m30s")
        total += float(found.group(1)) * _UNITS[found.group(2)]
        position = found.end()
    if not text:
        raise click.BadParameter("a duration is required")
    return total


class Duration(click.ParamType):  # type: ignore[type-arg]
    name = "duration"

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> float:
        if isinstance(value, float):
            return value
        try:
            return parse_duration(str(value))
        except click.BadParameter as exc:
            self.fail(exc.message, param, ctx)

"""What the documentation tells a user to type exists: every ``CS_*`` setting it names is read by
the code, every setting the service and ``contextctl`` read is documented with its real default,
every ``contextctl`` command and option it shows is one the client has, every route its
``curl`` examples and route tables name is served, every repository path it puts in a code span
exists, and every Python example parses and imports names that exist.

README.md and docs/*.md are read; the specification (docs/spec/) and the decision records
(docs/decisions/) are left out of the command checks: the one states the contract, the others
record what was true when they were written."""

from __future__ import annotations

import argparse
import ast
import dataclasses
import functools
import importlib
import re
import shlex
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, cast

import click
import msgspec
import pytest
from markdown_it import MarkdownIt
from markdown_it.token import Token

from context_service import cli as service_cli
from context_service import config
from context_service.adapters.eventstore.mapper import event_data
from context_service.adapters.nats import envelope
from context_service.contextctl import settings as client_settings
from context_service.contextctl.main import cli
from context_service.domain.registry import EVENTS
from context_service.http.app import create_app
from context_service.http.ports import Services
from tests.unit.test_docs_links import DOCUMENTS, ROOT, _tokens

SRC = ROOT / "src"
CONFIGURATION = ROOT / "docs" / "configuration.md"
CONTEXTCTL = ROOT / "docs" / "contextctl.md"
TESTING = ROOT / "docs" / "testing.md"
README = ROOT / "README.md"
# documents describing what users do now (not the contract, not the history)
GUIDES = [d for d in DOCUMENTS
          if not d.is_relative_to(ROOT / "docs" / "spec")
          and not d.is_relative_to(ROOT / "docs" / "decisions")]
SETTING = re.compile(r"\bCS_[A-Z0-9_]*[A-Z0-9](?:_\*)?")
SHELL_FENCES = ("sh", "bash", "shell", "console", "")
# repository folders whose paths a document may name in a code span
REPOSITORY_PATH = re.compile(r"^(?:src|tests|bench|deploy|migrations|\.ci)/[\w./-]*$")


def _parsed(document: Path) -> list[Token]:
    return MarkdownIt("commonmark").parse(document.read_text(encoding="utf-8"))


def _label(document: Path) -> str:
    return str(document.relative_to(ROOT))


# --- settings ----------------------------------------------------------------------------------


def settings_named(text: str) -> set[str]:
    """The ``CS_*`` names in a text; ``CS_AGENT_RATE_*`` stands for a family of them."""
    return set(SETTING.findall(text))


def _source_text(folder: Path, *suffixes: str) -> str:
    return "\n".join(p.read_text(encoding="utf-8") for p in sorted(folder.rglob("*"))
                     if p.suffix in suffixes and "__pycache__" not in p.parts)


def unread(named: set[str], code: str) -> set[str]:
    """The names no code reads (a family ``X_*`` is read when some ``X_...`` is)."""
    read = settings_named(code)
    return {name for name in named
            if (name[:-1] if name.endswith("*") else name) not in read
            and not (name.endswith("*") and any(r.startswith(name[:-1]) for r in read))}


def test_every_setting_a_document_names_is_read() -> None:
    code = _source_text(SRC, ".py", ".sh")
    missing = {_label(d): sorted(unread(settings_named(d.read_text(encoding="utf-8")), code))
               for d in GUIDES}
    # the test suites' own knobs are read by the tests and documented in testing.md only
    missing[_label(TESTING)] = sorted(
        unread(set(missing[_label(TESTING)]), _source_text(ROOT / "tests", ".py")))
    assert {d: names for d, names in missing.items() if names} == {}


def test_a_setting_nothing_reads_is_found() -> None:
    code = 'env.get("CS_LISTEN_ADDR")\nos.environ["CS_AGENT_RATE_BURST"]'
    named = settings_named("`CS_LISTEN_ADDR`, `CS_AGENT_RATE_*` and `CS_LISTEN_ADRESS`")
    assert named == {"CS_LISTEN_ADDR", "CS_AGENT_RATE_*", "CS_LISTEN_ADRESS"}
    assert unread(named, code) == {"CS_LISTEN_ADRESS"}


def table_rows(document: Path, after: str = "", before: str = "") -> dict[str, str]:
    """``| `CS_X` | default | ...`` rows of the document's part between two headings: the
    setting and its default cell."""
    text = document.read_text(encoding="utf-8")
    if after:
        text = text.split(after, 1)[1]
    if before:
        text = text.split(before, 1)[0]
    return dict(re.findall(r"^\| `(CS_[A-Z0-9_]+)` \| ([^|]*?) \|", text, re.MULTILINE))


SERVICE_TABLES = {
    "configuration.md": (CONFIGURATION, "## The service", "## The command-line client"),
    "README.md": (README, "## Configuration", "## Benchmarks"),
}
CLIENT_TABLES = {
    "configuration.md": (CONFIGURATION, "## The command-line client", ""),
    "contextctl.md": (CONTEXTCTL, "## Configuration", "## Output and exit codes"),
}


def test_every_setting_of_the_service_is_in_configuration_md() -> None:
    read = settings_named(Path(config.__file__).read_text(encoding="utf-8"))
    assert read - set(table_rows(*SERVICE_TABLES["configuration.md"])) == set()


@pytest.mark.parametrize("table", sorted(CLIENT_TABLES))
def test_every_setting_of_contextctl_is_documented(table: str) -> None:
    read = settings_named(Path(client_settings.__file__).read_text(encoding="utf-8"))
    assert read - set(table_rows(*CLIENT_TABLES[table])) == set()


def documented_value(cell: str) -> str | None:
    """The value a default cell states (`` `5` ``, ``""``); None where it states none in a
    form the environment takes (``unset``, ``required``, a description)."""
    cell = cell.strip()
    if cell == '`""`':
        return ""
    single = re.fullmatch(r"`([^`]*)`", cell)
    return single.group(1) if single else None


def _service(env: Mapping[str, str]) -> object:
    loaded = config.Settings.from_env(env)
    # the workers are a set: serve starts each one named, in its own order
    return dataclasses.replace(loaded, workers=tuple(sorted(loaded.workers)))


def defaults_that_differ(rows: dict[str, str],
                         load: Callable[[Mapping[str, str]], object]) -> dict[str, str]:
    """The settings whose documented default, set explicitly, loads differently from leaving
    the setting unset."""
    unset = load({})
    return {name: cell for name, cell in rows.items()
            if (value := documented_value(cell)) is not None and load({name: value}) != unset}


@pytest.mark.parametrize("table", sorted(SERVICE_TABLES))
def test_the_service_defaults_are_the_documented_ones(table: str) -> None:
    rows = table_rows(*SERVICE_TABLES[table])
    assert len(rows) >= 9
    assert defaults_that_differ(rows, _service) == {}


@pytest.mark.parametrize("table", sorted(CLIENT_TABLES))
def test_the_contextctl_defaults_are_the_documented_ones(table: str) -> None:
    rows = table_rows(*CLIENT_TABLES[table])
    assert set(rows) >= {"CS_URL", "CS_NAMESPACE"}
    assert defaults_that_differ(rows, client_settings.Settings.from_env) == {}


def test_a_wrong_default_is_found() -> None:
    rows = {"CS_READ_WAIT_SECONDS": "`5`", "CS_SHUTDOWN_GRACE": "`30`",
            "CS_DATABASE_URL": "unset", "CS_SANDBOX_SERVICE_ACCOUNT": '`""`',
            "CS_WORKERS": "`relay,snapshots,reconciler,query-index,projections`"}
    assert defaults_that_differ(rows, _service) == {"CS_SHUTDOWN_GRACE": "`30`"}


# --- contextctl invocations --------------------------------------------------------------------


def _commands_of_fence(token: Token) -> Iterator[str]:
    """The shell commands of a fence: every line of a script, the ``$ `` lines of a console
    session; continued lines joined, pipelines and command substitutions split."""
    console = token.info.strip() == "console"
    lines = iter(token.content.splitlines())
    for first in lines:
        line = first
        while line.endswith("\\"):
            line = line[:-1] + " " + next(lines, "")
        if console:
            if not line.startswith("$ "):
                continue
            line = line[2:]
        yield from re.split(r"\|\||&&|[|;()]", line.split(" # ")[0])


def _commands(document: Path) -> Iterator[str]:
    """Every shell command the document shows: in its shell fences and its code spans."""
    for token in _tokens(_parsed(document)):
        if token.type == "fence" and token.info.strip() in SHELL_FENCES:
            yield from _commands_of_fence(token)
        elif token.type == "code_inline":
            yield token.content


def contextctl_invocations(document: Path, program: str = "contextctl") -> list[str]:
    """The arguments of every ``contextctl`` (or other ``program``) command in the document's
    shell fences and code spans."""
    found = []
    for command in _commands(document):
        match = re.match(rf"\s*(?:\S*=\S*\s+)*(?:\S*/)?{program}(?:\s+(.*))?$", command)
        if match:
            found.append(match.group(1) or "")
    return found


def _words(arguments: str) -> list[str]:
    """The words of a shown command line: ``[`` ``]`` of optional parts and ``...`` dropped."""
    return [w for w in shlex.split(re.sub(r"[\[\]]", " ", arguments)) if w not in ("...", "…")]


def contextctl_problem(arguments: str) -> str | None:
    """Why ``contextctl <arguments>`` names a command or option the client lacks, or None.
    Values are not judged: ``PATH...``, ``rp_…`` and ``NAME`` stand for what the user types."""
    context = click.Context(cli)
    command: click.Command = cli
    words = _words(arguments)
    path: list[str] = []
    for word in words:
        if isinstance(command, click.Group) and not word.startswith("-"):
            found = command.get_command(context, word)
            if found is None:
                return f"no command `contextctl {' '.join([*path, word])}`"
            command, path = found, [*path, word]
        elif word.startswith("-") and word != "-":
            option = word.split("=", 1)[0]
            help_option = command.get_help_option(context)
            known = {name for param in command.params
                     for name in (*param.opts, *param.secondary_opts)}
            known |= set(help_option.opts) if help_option else set()
            if option not in known:
                return f"`contextctl {' '.join(path)}` has no option {option}"
    return None


@pytest.mark.parametrize("document", GUIDES, ids=_label)
def test_every_contextctl_command_shown_exists(document: Path) -> None:
    problems = [f"{arguments!r}: {problem}" for arguments in contextctl_invocations(document)
                if (problem := contextctl_problem(arguments))]
    assert problems == []


def test_a_contextctl_command_that_is_not_there_is_found(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("```console\n$ contextctl ctx ls -n team1\nNAME\n$ contextctl ctx rm x "
                    "[--force]\n```\n\n```sh\nCS_SUBJECT=user:a .venv/bin/contextctl agent sets "
                    "ls \\\n"
                    "  --agent | head  # note\n```\n\n`contextctl pack --stream`, `contextctl "
                    "ctx get --as-at T`, `contextctl --help`\n", encoding="utf-8")
    invocations = contextctl_invocations(page)
    assert invocations == ["ctx ls -n team1", "ctx rm x [--force]", "agent sets ls    --agent ",
                           "pack --stream", "ctx get --as-at T", "--help"]
    assert [contextctl_problem(i) for i in invocations] == [
        None, None, None, "no command `contextctl pack`",
        "`contextctl ctx get` has no option --as-at", None]


def context_service_problem(arguments: str) -> str | None:
    """Why ``context-service <arguments>`` names a command or option the service's command
    lacks, or None."""
    command = service_cli.parser()
    path: list[str] = []
    for word in _words(arguments):
        commands = [a for a in command._actions if isinstance(a, argparse._SubParsersAction)]
        if commands and not word.startswith("-"):
            if word not in commands[0].choices:
                return f"no command `context-service {' '.join([*path, word])}`"
            command, path = commands[0].choices[word], [*path, word]
        elif word.startswith("-") and word.split("=", 1)[0] not in command._option_string_actions:
            return f"`context-service {' '.join(path)}` has no option {word.split('=', 1)[0]}"
    return None


@pytest.mark.parametrize("document", GUIDES, ids=_label)
def test_every_context_service_command_shown_exists(document: Path) -> None:
    problems = [f"{arguments!r}: {problem}"
                for arguments in contextctl_invocations(document, "context-service")
                if (problem := context_service_problem(arguments))]
    assert problems == []


def test_a_context_service_command_that_is_not_there_is_found() -> None:
    assert context_service_problem("history export [--namespace NS] --output F.jsonl") is None
    assert context_service_problem("projections rebuild [NAME...]") is None
    assert context_service_problem("projections drop") == (
        "no command `context-service projections drop`")
    assert context_service_problem("events tail --subjects S") == (
        "`context-service events tail` has no option --subjects")


# --- routes ------------------------------------------------------------------------------------


@functools.cache
def served_routes() -> frozenset[tuple[str, str]]:
    """(method, path pattern) of every route of the application, built without its services
    (nothing is called while routes are only listed); ``*`` is any method (``/mcp``, an ASGI
    route that answers the others itself)."""
    app = create_app(Services(*([None] * 6)))
    return frozenset((method, route.path) for route in app.routes
                     for method in ({m for handler in getattr(route, "route_handlers", [])
                                     for m in getattr(handler, "http_methods", ())} or {"*"}))


def _pattern(path: str) -> re.Pattern[str]:
    parts = re.split(r"(\{[^}]+\})", path)
    regex = "".join(("(?:.+)" if part.endswith(":path}") else "[^/]+") if part.startswith("{")
                    else re.escape(part) for part in parts)
    return re.compile(regex)


def is_served(method: str, path: str, routes: frozenset[tuple[str, str]]) -> bool:
    return any(m in (method, "*") and _pattern(p).fullmatch(path) for m, p in routes)


def curl_requests(document: Path) -> list[tuple[str, str]]:
    """(method, path) of every ``curl`` command in the document's shell fences and code spans:
    ``-X``/``-XPOST`` names the method, a body without one means POST."""
    found = []
    for command in _commands(document):
        if not re.match(r"\s*curl\s", command):
            continue
        method = re.search(r"\s-X\s*([A-Z]+)", command)
        url = re.search(r"(?:localhost|127\.0\.0\.1)(?::\d+)?(/[^\s'\"?]*)|\$\{?URL\}?"
                        r"(/[^\s'\"?]*)", command)
        if url:
            body = re.search(r"\s(?:-d|--data\S*)\s", command)
            verb = method.group(1) if method else "POST" if body else "GET"
            found.append((verb, url.group(1) or url.group(2)))
    return found


def table_routes(document: Path) -> list[tuple[str, str]]:
    """(method, path) of every ``| GET, PUT | `/path` |`` row; ``...`` is a context's path."""
    found = []
    rows = re.findall(r"^\| ((?:GET|PUT|POST|DELETE)(?:, (?:GET|PUT|POST|DELETE))*) \| "
                      r"`([^`]+)`(?:, `([^`]+)`)?", document.read_text(encoding="utf-8"),
                      re.MULTILINE)
    for methods, path, sibling in rows:
        path = path.split("[", 1)[0].replace("...", "/v1/namespaces/{ns}")
        paths = [path]
        if sibling:  # `/api/agent/v1/fields/list`, `/fields/query`
            paths.append(path[: path.rindex("/", 0, path.rindex("/"))] + sibling)
        found += [(method, p) for method in methods.split(", ") for p in paths]
    return found


@pytest.mark.parametrize("document", GUIDES, ids=_label)
def test_every_curl_example_names_a_served_route(document: Path) -> None:
    routes = served_routes()
    assert [r for r in curl_requests(document) if not is_served(*r, routes)] == []


def test_every_route_in_api_md_is_served() -> None:
    routes = served_routes()
    documented = table_routes(ROOT / "docs" / "api.md")
    assert len(documented) > 40
    assert [r for r in documented if not is_served(*r, routes)] == []


def test_a_route_that_is_not_served_is_found(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("```sh\ncurl -s -XPUT localhost:8080/v1/namespaces/a/members \\\n  -d '{}'\n"
                    "curl -s \"$URL/api/agent/v1/context-pack\" -d '{}'\ncurl -s localhost:8080"
                    "/v1/namespaces/a/contexts?limit=1\n```\n\n| GET, DELETE | `.../contexts/"
                    "{name}/snapshot` | |\n| POST | `/api/agent/v1/fields/list`, `/fields/query` |"
                    " |\n", encoding="utf-8")
    routes = served_routes()
    assert [is_served(*r, routes) for r in curl_requests(page)] == [True, False, True]
    assert [(r, is_served(*r, routes)) for r in table_routes(page)] == [
        (("GET", "/v1/namespaces/{ns}/contexts/{name}/snapshot"), False),
        (("DELETE", "/v1/namespaces/{ns}/contexts/{name}/snapshot"), False),
        (("POST", "/api/agent/v1/fields/list"), True),
        (("POST", "/api/agent/v1/fields/query"), True)]


# --- paths and Python examples -----------------------------------------------------------------


def repository_paths(document: Path) -> list[str]:
    """The repository paths the document names in code spans (``src/...``, ``tests/...``, a
    test id's file part); globs and placeholders are not paths."""
    found = []
    for token in _tokens(_parsed(document)):
        if token.type != "code_inline":
            continue
        for word in token.content.split():
            word = word.split("::", 1)[0].rstrip(",:;")
            if REPOSITORY_PATH.match(word) and not re.search(r"[*{}<>]", word):
                found.append(word)
    return found


@pytest.mark.parametrize("document", GUIDES, ids=_label)
def test_every_repository_path_shown_exists(document: Path) -> None:
    assert [p for p in repository_paths(document) if not (ROOT / p).exists()] == []


def python_examples(document: Path) -> list[str]:
    return [token.content for token in _parsed(document)
            if token.type == "fence" and token.info.strip() == "python"]


def missing_imports(example: str) -> list[str]:
    """The ``context_service`` names the example imports that do not exist."""
    missing = []
    for node in ast.walk(ast.parse(example)):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("context_service"):
            module: Any = importlib.import_module(cast(str, node.module))
            missing += [f"{node.module}.{alias.name}" for alias in node.names
                        if not hasattr(module, alias.name)]
    return missing


@pytest.mark.parametrize("document", [d for d in GUIDES if python_examples(d)], ids=_label)
def test_every_python_example_parses_and_imports_what_exists(document: Path) -> None:
    problems = []
    for example in python_examples(document):
        try:
            problems += missing_imports(example)
        except SyntaxError as exc:
            problems.append(f"not Python (line {exc.lineno}): {exc.text!r}")
    assert problems == []


def test_a_python_example_that_cannot_run_is_found() -> None:
    assert missing_imports("from context_service.client import Client, Klient\n") == [
        "context_service.client.Klient"]
    with pytest.raises(SyntaxError):
        missing_imports("if pack.refused: answer 422\n")


# --- metric names ------------------------------------------------------------------------------


def metric_names(document: Path) -> set[str]:
    """The ``cs_...`` names the document puts in code spans (metrics, and the cookie and login
    of that prefix); ``cs_relay_*`` families are not names."""
    return {token.content for token in _tokens(_parsed(document))
            if token.type == "code_inline"
            and re.fullmatch(r"cs_[a-z0-9_]*[a-z0-9]", token.content)}


@pytest.mark.parametrize("document", GUIDES, ids=_label)
def test_every_metric_name_shown_is_in_the_code(document: Path) -> None:
    code = _source_text(SRC, ".py", ".sql") + _source_text(ROOT / "migrations", ".sql")
    # prometheus_client adds a counter's _total and a histogram's series suffixes itself
    defined = [re.sub(r"_(?:total|bucket|count|sum)$", "", n) for n in metric_names(document)]
    assert sorted(n for n in defined if not re.search(rf"\b{n}(?:_total)?\b", code)) == []


def test_a_metric_name_is_read_from_code_spans(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("`cs_relay_*` and `cs_projection_lag` and `cs_http_requests_total{route}`\n",
                    encoding="utf-8")
    assert metric_names(page) == {"cs_projection_lag"}


# --- the published envelope ----------------------------------------------------------------------


def test_the_envelope_example_is_what_the_relay_publishes() -> None:
    """The example of events.md is a real event: an envelope, whose ``data`` is exactly what the
    named event publishes (no field missing, none invented) and whose ``aggregateId`` is a
    context's ``namespace/name``."""
    examples = [token.content for token in _parsed(ROOT / "docs" / "events.md")
                if token.type == "fence" and token.info.strip() == "json"
                and '"aggregateId"' in token.content]
    assert len(examples) == 1
    shown = envelope.decode(examples[0].encode())
    event = msgspec.convert({**shown.data, "at": shown.timestamp, "actor": shown.actor},
                            EVENTS[shown.name], strict=False)
    published = {k: v for k, v in event_data(event).items() if k not in ("at", "actor")}
    assert published == shown.data
    assert shown.aggregate == "context"
    assert shown.aggregate_id == f"{shown.namespace}/{shown.data['name']}"

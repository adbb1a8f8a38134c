"""The client's own behaviour without a service (httpx's mock transport stands in for the
network): the headers it sends (the agent API's too), how it words failures, how it reads what a
write recorded, numbers in tables, durations, completion scripts, help and usage errors."""

from __future__ import annotations

import json

import httpx
import pytest

from context_service.client.routes import SETS_LIST as AGENT_SETS
from context_service.contextctl.agent_api import AgentApi
from context_service.contextctl.client import Client, ServiceError, service_error
from context_service.contextctl.main import main
from context_service.contextctl.options import App, parse_duration
from context_service.contextctl.output import cell_text
from context_service.contextctl.settings import Settings
from context_service.contract import agent as c
from tests.support.fresh import loaded_packages


def answering(status: int, body: object, seen: list[httpx.Request],
              headers: dict[str, str] | None = None) -> httpx.MockTransport:
    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(status, json=body, headers=headers)
    return httpx.MockTransport(handle)


def test_headers_from_the_environment() -> None:
    seen: list[httpx.Request] = []
    settings = Settings.from_env({"CS_URL": "http://cs.example/", "CS_TOKEN": "tok",
                                  "CS_SUBJECT": "  user:alice  "})
    assert settings.url == "http://cs.example"
    client = Client(settings, answering(200, {"status": "ok"}, seen))
    client.get("/healthz")
    assert seen[0].url == "http://cs.example/healthz"
    assert seen[0].headers["X-SH-Auth"] == "tok"
    assert seen[0].headers["X-Context-Subject"] == "user:alice"
    assert "Authorization" not in seen[0].headers


def test_no_token_no_subject_means_no_headers() -> None:
    seen: list[httpx.Request] = []
    Client(Settings.from_env({}), answering(200, {}, seen)).get("/healthz")
    assert "X-SH-Auth" not in seen[0].headers and "X-Context-Subject" not in seen[0].headers
    assert str(seen[0].url) == "http://localhost:8080/healthz"


def agent_api(env: dict[str, str], transport: httpx.BaseTransport) -> AgentApi:
    return AgentApi(App(Settings.from_env(env)), transport)


def test_agent_requests_carry_the_credential_not_the_subject() -> None:
    seen: list[httpx.Request] = []
    env = {"CS_SUBJECT": "user:alice", "CS_AGENT_TOKEN": "bdk_x", "CS_TOKEN": "tok"}
    with agent_api(env, answering(200, {"items": []}, seen)) as api:
        answer = api.ask(AGENT_SETS, c.ListContextSetsRequest(limit=3), c.ContextSetList)
    assert (answer.value, answer.raw) == (c.ContextSetList(items=[]), b'{"items":[]}')
    assert seen[0].headers["Authorization"] == "Bearer bdk_x"
    assert seen[0].headers["X-SH-Auth"] == "tok"
    assert seen[0].content == b'{"limit":3}'  # options left out are not sent
    assert "X-Context-Subject" not in seen[0].headers
    with pytest.raises(ServiceError, match="set CS_AGENT_TOKEN"), \
            agent_api({}, answering(200, {}, seen)) as api:
        api.ask(AGENT_SETS, c.ListContextSetsRequest(), c.ContextSetList)
    assert len(seen) == 1


def failing(exc: Exception) -> httpx.MockTransport:
    def handle(request: httpx.Request) -> httpx.Response:
        raise exc
    return httpx.MockTransport(handle)


@pytest.mark.parametrize(("transport", "printed", "status"), [
    (answering(400, {"code": "VALIDATION_ERROR", "message": "request validation failed",
                     "details": [{"path": "$.term", "message": "must not be blank"},
                                 "not an object"]}, []),
     "request validation failed\n  $.term: must not be blank", 400),
    (answering(422, {"code": "AGENT_PACK_INCOMPLETE", "message": "the pack is incomplete",
                     "details": {"missing": []}}, []), "the pack is incomplete", 422),
    (answering(429, {"code": "RATE_LIMITED", "message": "rate limit exceeded"}, [],
               {"Retry-After": "1"}), "rate limit exceeded", 429),  # not retried
    (answering(503, "not an error body", []),
     "context service returned 503 Service Unavailable", 503),
    (failing(httpx.ReadTimeout("slow")),
     "the context service at http://localhost:8080 did not answer in time (ReadTimeout)", 0),
    (failing(httpx.ConnectError("refused")),
     "cannot reach the context service at http://localhost:8080: refused", 0),
])
def test_agent_api_errors_read_as_the_cli_words_them(transport: httpx.BaseTransport,
                                                     printed: str, status: int) -> None:
    with pytest.raises(ServiceError) as caught, \
            agent_api({"CS_AGENT_TOKEN": "bdk_x"}, transport) as api:
        api.ask(AGENT_SETS, c.ListContextSetsRequest(), c.ContextSetList)
    assert (str(caught.value), caught.value.status) == (printed, status)


@pytest.mark.parametrize(("status", "body", "printed"), [
    (404, {"error": "not_found", "message": "sandbox pool not found"}, "sandbox pool not found"),
    (502, {"error": "x", "message": ""}, "context service returned 502 Bad Gateway"),
    (503, "not json", "context service returned 503 Service Unavailable"),
    (400, {"code": "VALIDATION_ERROR", "message": "request validation failed", "details": [
        {"path": "$.name", "message": "is required"}]},
     "request validation failed\n  $.name: is required"),
    (400, {"code": "VALIDATION_ERROR", "message": "request validation failed", "details": [
        {"path": "$.name", "message": "is required"}, "not an object",
        {"path": "$.scopes", "message": "must not be empty"}]},
     "request validation failed\n  $.name: is required\n  $.scopes: must not be empty"),
    (422, {"code": "X", "message": "incomplete", "details": {"missing": ["a"]}}, "incomplete"),
])
def test_error_messages(status: int, body: object, printed: str) -> None:
    content = body.encode() if isinstance(body, str) else json.dumps(body).encode()
    error = service_error(httpx.Response(status, content=content))
    assert (str(error), error.status) == (printed, status)
    assert error.message == printed.split("\n")[0]


def test_the_recorded_position_is_read_from_the_answer() -> None:
    recorded = Client(Settings.from_env({}), answering(200, {}, [], {
        "X-Context-Position": "42"})).put("/x", {})
    assert recorded.position == 42
    assert Client(Settings.from_env({}), answering(200, {}, [])).put("/x", {}).position is None


@pytest.mark.parametrize(("value", "text"), [
    (0.571429, "0.571429"), (0.000001, "0.000001"), (1, "1"), (0.5, "0.5"), (None, ""),
    (True, "true"), (["a", 2], "a,2")])
def test_cells_write_numbers_as_the_service_does(value: object, text: str) -> None:
    assert cell_text(value) == text


@pytest.mark.parametrize(("text", "seconds"), [
    ("2m", 120.0), ("90s", 90.0), ("1m30s", 90.0), ("500ms", 0.5), ("1.5h", 5400.0), ("0", 0.0)])
def test_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("shell", ["bash", "zsh"])
def test_completion_scripts(shell: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["completion", shell]) == 0
    script = capsys.readouterr().out
    assert "_CONTEXTCTL_COMPLETE" in script and f"{shell}_complete" in script


def test_completion_of_commands(monkeypatch: pytest.MonkeyPatch,
                                capsys: pytest.CaptureFixture[str]) -> None:
    """What the shell function asks: the words completing ``contextctl ctx gr``."""
    monkeypatch.setenv("_CONTEXTCTL_COMPLETE", "bash_complete")
    monkeypatch.setenv("COMP_WORDS", "contextctl ctx gr")
    monkeypatch.setenv("COMP_CWORD", "2")
    with pytest.raises(SystemExit):
        main([])  # the shell function runs the program without arguments
    assert capsys.readouterr().out.split() == ["plain,grants", "plain,grant"]


def test_help_and_usage(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 0
    assert "Commands:" in capsys.readouterr().out
    assert main(["help", "ctx", "grant"]) == 0
    assert "Usage: contextctl ctx grant [OPTIONS] NAME SUBJECT" in capsys.readouterr().out
    assert main(["help", "nothing"]) == 2
    assert "unknown command 'nothing'" in capsys.readouterr().err
    assert main(["snapshot"]) == 2
    assert "Usage: contextctl snapshot" in capsys.readouterr().err
    assert main(["ctx", "ls", "--json", "-o", "yaml"]) == 2
    assert "--json cannot be combined with -o yaml" in capsys.readouterr().err


def test_only_the_mcp_command_loads_the_mcp_sdk() -> None:
    """The SDK is most of the client's start-up: ``--help`` lists ``mcp`` without importing
    it (a fresh interpreter: this one may hold it already)."""
    probe = loaded_packages("from context_service.contextctl.main import main\n"
                            "result = main(['--help'])", ("mcp",))
    assert (probe.result, probe.imported) == ("0", [])
    assert any(line.split()[:1] == ["mcp"] for line in probe.printed)


@pytest.mark.parametrize(("args", "message"), [
    (["agent", "sets", "ls", "--query", "x"], "--query and --limit need --agent"),
    (["agent", "sets", "get"], "ID is required (or use --agent with a bound credential)"),
    (["agent", "sets", "get", "--agent", "-n", "ws"], "-n cannot be combined with --agent"),
    (["agent", "lookup", "ARR", "--limit", "51"], "51 is not in the range 1<=x<=50"),
    (["agent", "match"], "Missing argument 'QUESTION'"),
])
def test_agent_usage_errors(args: list[str], message: str, monkeypatch: pytest.MonkeyPatch,
                            capsys: pytest.CaptureFixture[str]) -> None:
    """Refused before any request (the URL points nowhere: a request would exit 1)."""
    monkeypatch.setenv("CS_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("CS_AGENT_TOKEN", "bdk_x")
    assert main(args) == 2
    assert message in capsys.readouterr().err


def test_agent_commands_need_the_credential(monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("CS_AGENT_TOKEN", raising=False)
    monkeypatch.setenv("CS_URL", "http://127.0.0.1:9")
    assert main(["agent", "lookup", "ARR"]) == 1
    assert capsys.readouterr().err == (
        "contextctl: an agent credential is required: set CS_AGENT_TOKEN\n")

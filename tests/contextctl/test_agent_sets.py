"""``contextctl agent sets``, ``agent lookup`` and ``agent match`` against a served process:
context sets managed from JSON files, the library read with unbound and bound credentials
(golden transcript), and the ``/api/`` errors with their details."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from tests.contextctl.conftest import Cli, complete_words
from tests.contextctl.golden import check, transcript
from tests.contextctl.normalise import normalise
from tests.e2e.server import ServerProcess

pytestmark = [pytest.mark.e2e, pytest.mark.postgres]
ADMIN = "service:context-service-admin"
CFO = {"id": "current-cfo", "question": "Who is our CFO?",
       "answer": "Priya Raman has been CFO since 1 July 2024.",
       "citations": ["company-facts/cfo-2024"]}
ARR = {"term": "ARR", "definition": "Annual recurring revenue.",
       "aliases": ["annual recurring revenue"]}
FINANCE = {"id": "finance", "name": "Finance", "description": "Revenue and CFO answers",
           "collections": ["company-facts", "reports"], "verifiedAnswers": [CFO],
           "definitions": [ARR], "instructions": [{"id": "cite", "text": "Cite every figure."}],
           "requiredEvidence": [{"id": "cfo", "description": "CFO appointment",
                                 "query": "CFO appointment"}]}
BOARD = {"id": "board", "name": "Board", "description": "CFO reports", "collections": ["minutes"],
         "verifiedAnswers": [{"id": "cfo", "question": "who is the CFO",
                              "answer": "See the minutes."}],
         "definitions": [{"term": "Annual recurring revenue", "definition": "ARR."}]}


def workspace(cli: Cli, name: str) -> tuple[str, str]:
    """``name`` with alice as owner and vic as viewer; the ``-n`` option for it."""
    ns = ("-n", name)
    assert cli("agent", "members", "set", "user:alice", "owner", *ns, subject=ADMIN).code == 0
    assert cli("agent", "members", "set", "user:vic", "viewer", *ns).code == 0
    return ns


def write(tmp_path: Path, name: str, body: Any) -> str:
    path = tmp_path / name
    path.write_text(json.dumps(body))
    return str(path)


def credential(cli: Cli, ns: tuple[str, str], *options: str) -> str:
    made = cli("agent", "credentials", "create", "agent", "--json", *options, *ns)
    assert made.code == 0, made.err
    token: str = json.loads(made.out)["token"]
    return token


def test_create_get_list_from_files(cli: Cli, tmp_path: Path, service: ServerProcess,
                                    monkeypatch: pytest.MonkeyPatch,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    ns = workspace(cli, "ctl-sets")
    made = cli("agent", "sets", "create", write(tmp_path, "finance.json", FINANCE), *ns)
    assert made.code == 0, made.err
    assert normalise(made.out, columns=False) == (
        "Context set\n"
        "  ID:          finance\n"
        "  Name:        Finance\n"
        "  Description: Revenue and CFO answers\n"
        "  Status:      active\n"
        "  Version:     1\n"
        "  Collections: company-facts,reports\n"
        "  Created:     <TIME>\n"
        "  Updated:     <TIME>\n"
        "\n"
        "Verified answers:\n"
        "  ID            QUESTION          CITATIONS                ANSWER\n"
        "  current-cfo   Who is our CFO?   company-facts/cfo-2024   Priya Raman has been CFO "
        "since 1 July 2024.\n"
        "\n"
        "Definitions:\n"
        "  TERM   ALIASES                    DEFINITION\n"
        "  ARR    annual recurring revenue   Annual recurring revenue.\n"
        "\n"
        "Instructions:\n"
        "  ID     TEXT\n"
        "  cite   Cite every figure.\n"
        "\n"
        "Required evidence:\n"
        "  ID    DESCRIPTION       QUERY\n"
        "  cfo   CFO appointment   CFO appointment\n")
    with monkeypatch.context() as patch:
        patch.setattr("sys.stdin", io.StringIO(json.dumps(BOARD)))
        from_stdin = cli("agent", "sets", "create", "-", *ns, "--json")
    assert from_stdin.out.startswith('{"id":"board","name":"Board","description":"CFO reports",'
                                     '"status":"active","version":1,"collections":["minutes"],')
    listed = cli("agent", "sets", "ls", *ns, subject="user:vic")
    assert normalise(listed.out) == (
        "ID  NAME  STATUS  VERSION  COLLECTIONS  UPDATED\n"
        "board  Board  active  1  minutes  <TIME>\n"
        "finance  Finance  active  1  company-facts,reports  <TIME>\n")
    shown = cli("agent", "sets", "get", "finance", *ns, subject="user:vic")
    assert shown.out == made.out
    as_json = json.loads(cli("agent", "sets", "get", "finance", *ns, "--json").out)
    assert {k: as_json[k] for k in FINANCE} == FINANCE
    words = "contextctl agent sets get -n ctl-sets "
    assert complete_words(service.url, words, monkeypatch, capsys) == ["board", "finance"]
    empty = cli("agent", "sets", "ls", "-n", "ctl-sets-none", subject=ADMIN)
    assert (empty.code, empty.out) == (0, "No context sets found.\n")


def test_replace_and_archive(cli: Cli, tmp_path: Path) -> None:
    ns = workspace(cli, "ctl-sets-life")
    assert cli("agent", "sets", "create", write(tmp_path, "f.json", FINANCE), *ns).code == 0
    without_id = {k: v for k, v in FINANCE.items() if k not in ("id", "verifiedAnswers")}
    replaced = cli("agent", "sets", "replace", "finance",
                   write(tmp_path, "v2.json", {**without_id, "name": "Finance v2"}), *ns)
    assert (replaced.code, replaced.err) == (0, "")
    assert "  Name:        Finance v2\n  Description: Revenue and CFO answers\n" in replaced.out
    assert "  Version:     2\n" in replaced.out and "Verified answers" not in replaced.out
    same = cli("agent", "sets", "replace", "finance", str(tmp_path / "v2.json"), *ns)
    assert (same.code, same.err) == (
        0, "context set finance unchanged: the content equals version 2\n")
    assert "  Version:     2\n" in same.out
    other = cli("agent", "sets", "replace", "finance", str(tmp_path / "f.json"), "-n",
                "ctl-sets-life")
    assert other.code == 0 and "  Version:     3\n" in other.out
    mismatch = cli("agent", "sets", "replace", "finance",
                   write(tmp_path, "board.json", BOARD), *ns)
    assert (mismatch.code, mismatch.err) == (1, "contextctl: context set id must match the path\n")
    archived = cli("agent", "sets", "archive", "finance", *ns)
    assert (archived.code, archived.out) == (0, "archived context set finance\n")
    again = cli("agent", "sets", "rm", "finance", *ns)
    assert (again.code, again.out) == (0, "context set finance is already archived\n")
    frozen = cli("agent", "sets", "replace", "finance", str(tmp_path / "v2.json"), *ns)
    assert (frozen.code, frozen.err) == (
        1, "contextctl: context set conflict: context set is archived\n")
    taken = cli("agent", "sets", "create", str(tmp_path / "f.json"), *ns)
    assert (taken.code, taken.err) == (1, "contextctl: context set already exists\n")
    shown = cli("agent", "sets", "get", "finance", *ns)
    assert "  Status:      archived\n  Version:     3\n" in shown.out


def test_management_errors(cli: Cli, tmp_path: Path) -> None:
    ns = workspace(cli, "ctl-sets-err")
    blank = cli("agent", "sets", "create", write(tmp_path, "b.json", {**BOARD, "name": " "}), *ns)
    assert (blank.code, blank.err) == (
        1, "contextctl: context set name must be 1 to 100 characters\n")
    viewer = cli("agent", "sets", "create", str(tmp_path / "b.json"), *ns, subject="user:vic")
    assert (viewer.code, viewer.err) == (1, "contextctl: workspace not found\n")
    unknown = cli("agent", "sets", "get", "nothing", *ns)
    assert (unknown.code, unknown.err) == (1, "contextctl: context set not found\n")
    gone = cli("agent", "sets", "archive", "nothing", *ns)
    assert (gone.code, gone.err) == (1, "contextctl: context set not found\n")
    field = cli("agent", "sets", "create", write(tmp_path, "x.json", {**BOARD, "colour": 1}), *ns)
    assert field.code == 1 and field.err.startswith("contextctl: ") and "colour" in field.err
    broken = tmp_path / "broken.json"
    broken.write_text("{")
    assert cli("agent", "sets", "create", str(broken), *ns).code == 2
    assert cli("agent", "sets", "create", write(tmp_path, "l.json", [BOARD]), *ns).code == 2
    assert cli("agent", "sets", "create", str(tmp_path / "absent.json"), *ns).code == 2


def test_library_golden(cli: Cli, tmp_path: Path) -> None:
    ns = workspace(cli, "ctl-lib")
    for body in (FINANCE, BOARD, {**FINANCE, "id": "old", "name": "Old CFO facts",
                                   "description": ""}):
        assert cli("agent", "sets", "create", write(tmp_path, "s.json", body), *ns).code == 0
    unbound = credential(cli, ns)
    bound = credential(cli, ns, "--context-set", "finance")
    rows = normalise(cli("agent", "credentials", "ls", *ns).out).splitlines()
    assert rows[1].endswith("  user:alice  finance") and rows[2].endswith("  user:alice")
    unknown = cli("agent", "credentials", "create", "x", "--context-set", "nothing", *ns)
    assert unknown.err == ("contextctl: request validation failed\n"
                           "  $.contextSetId: must name an active context set\n")
    assert cli("agent", "sets", "archive", "old", *ns).code == 0
    text = "# CS_AGENT_TOKEN: an unbound credential of ctl-lib\n" + transcript(cli, [
        ["agent", "sets", "ls", "--agent"],
        ["agent", "sets", "ls", "--agent", "--query", "finance revenue"],
        ["agent", "sets", "get", "--agent", "board"],
        ["agent", "sets", "get", "--agent"],
        ["agent", "match", "Who is the current CFO, and since when?"],
        ["agent", "lookup", "annual recurring revenue"],
        ["agent", "lookup", "annual recurring revenue", "--set", "finance"],
        ["agent", "lookup", "revenue", "--limit", "1"],
        ["agent", "lookup", "payroll"],
        ["agent", "match", "Who is the CFO?", "--set", "old"],
    ], CS_AGENT_TOKEN=unbound) + "# CS_AGENT_TOKEN: a credential bound to finance\n" + transcript(
        cli, [
        ["agent", "sets", "ls", "--agent"],
        ["agent", "sets", "get", "--agent"],
        ["agent", "sets", "get", "--agent", "board"],
        ["agent", "match", "Who is the current CFO, and since when?"],
        ["agent", "match", "Who is the current CFO, and since when?", "--json"],
        ["agent", "lookup", "annual recurring revenue"],
    ], CS_AGENT_TOKEN=bound)
    check("agent-library", text)


def test_library_errors(cli: Cli) -> None:
    ns = workspace(cli, "ctl-lib-err")
    token = credential(cli, ns)
    both = cli("agent", "lookup", " ", "--set", "", CS_AGENT_TOKEN=token)
    assert (both.code, both.out, both.err) == (1, "", (
        "contextctl: request validation failed\n"
        "  $.term: must not be blank\n"
        "  $.contextSetId: must not be empty\n"))
    long = cli("agent", "match", "x" * 4001, CS_AGENT_TOKEN=token)
    assert long.err == ("contextctl: request validation failed\n"
                        "  $.question: must be 1 to 4000 characters\n")
    nothing = cli("agent", "match", "Who is the CFO?", CS_AGENT_TOKEN=token)
    assert (nothing.code, nothing.out) == (0, "No verified answers found.\n")
    runner = credential(cli, ns, "--scope", "queries:run")
    scope = cli("agent", "sets", "ls", "--agent", CS_AGENT_TOKEN=runner)
    assert (scope.code, scope.err) == (
        1, 'contextctl: agent credential lacks scope "context:read"\n')
    ident = token[4:20]
    assert cli("agent", "credentials", "revoke", ident, *ns).code == 0
    revoked = cli("agent", "lookup", "ARR", CS_AGENT_TOKEN=token)
    assert (revoked.code, revoked.err) == (1, "contextctl: agent credential is not valid\n")
    malformed = cli("agent", "lookup", "ARR", CS_AGENT_TOKEN="not-a-token")
    assert malformed.err == "contextctl: agent credential is malformed\n"
    missing = cli("agent", "match", "Who?")
    assert (missing.code, missing.err) == (
        1, "contextctl: an agent credential is required: set CS_AGENT_TOKEN\n")

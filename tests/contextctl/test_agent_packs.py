"""``contextctl agent pack`` and ``agent replay`` against a served process: a pack as text, as
the service's JSON and from the stream route; verify and recompute; the ``/api/`` errors."""

from __future__ import annotations

import json

import pytest

from tests.contextctl.conftest import Cli
from tests.contextctl.test_agent_sets import credential, workspace
from tests.e2e.server import ServerProcess

pytestmark = [pytest.mark.e2e, pytest.mark.postgres]
TASK = "Who is the current CFO, and since when?"
REV = "4f1c2a9b0d3e5f607182a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f8"
RECORDS = [("cfo-2024", "Acme appointed Priya Raman as CFO effective 1 July 2024."),
           ("canteen", "Canteen: vegetarian lunch every Friday.")]


def facts(service: ServerProcess, ns: str) -> None:
    headers = {"X-Context-Subject": "user:alice"}
    with service.client() as http:
        assert http.post("/v1/contexts", headers=headers, json={
            "name": "company-facts", "namespace": ns, "type": "knowledge",
            "storage": {"backend": "pvc", "size": "1Gi", "accessMode": "ReadWriteMany"},
        }).status_code == 201
        base = f"/v1/namespaces/{ns}/contexts/company-facts"
        assert http.post(f"{base}/revisions", headers=headers, json={
            "id": REV, "createdAt": "2026-05-01T10:00:00Z", "operation": "sync",
        }).status_code == 201
        records = [{"id": i, "context": "company-facts", "type": "knowledge", "revision": REV,
                    "text": t, "source": {"context": "", "type": "", "revision": ""}}
                   for i, t in RECORDS]
        assert http.put(f"{base}/query-index", headers=headers,
                        json={"revision": REV, "records": records}).status_code == 204


def test_pack_and_replay(cli: Cli, service: ServerProcess) -> None:
    ns = workspace(cli, "ctl-packs")
    facts(service, ns[1])
    agent = {"CS_AGENT_TOKEN": credential(cli, ns)}
    pinned = ("--valid-time", "2025-01-01T00:00:00Z", "--max-tokens", "2000")
    text = cli("agent", "pack", TASK, *pinned, **agent)
    assert text.code == 0, text.err
    assert text.out.startswith("Context pack\n  Pack:")
    assert "psg:company-facts/cfo-2024" in text.out and "Tokens:" in text.out
    raw = cli("agent", "pack", TASK, *pinned, "--json", **agent)
    pack = json.loads(raw.out)
    assert pack["items"][0]["id"] == "psg:company-facts/cfo-2024"
    lines = cli("agent", "pack", TASK, *pinned, "--stream", "--json", **agent).out
    assert [json.loads(line)["type"] for line in lines.splitlines()] == [
        "header", *["item"] * len(pack["items"]), "footer"]
    streamed = cli("agent", "pack", TASK, *pinned, "--stream", **agent)
    assert streamed.out == text.out  # the same pack, put back together from its lines
    verified = cli("agent", "replay", pack["replayId"], "verify", **agent)
    assert verified.code == 0, verified.err
    assert "Matches:" in verified.out and "unchanged" in verified.out
    again = cli("agent", "replay", pack["replayId"], "recompute", "--task", TASK, "--json",
                **agent)
    assert json.loads(again.out)["diff"] == {"added": [], "removed": [], "changed": [],
                                             "unchanged": len(pack["items"])}
    wrong = cli("agent", "replay", pack["replayId"], "recompute", "--task", "other", **agent)
    assert (wrong.code, wrong.err) == (
        1, "contextctl: task does not match the recorded task hash\n")
    unknown = cli("agent", "replay", "rp_nope", "verify", **agent)
    assert (unknown.code, unknown.err) == (1, "contextctl: replay not found\n")
    invalid = cli("agent", "pack", "  ", **agent)
    assert invalid.code == 1 and "$.task: must not be blank" in invalid.err

"""``contextctl ctx``: contexts, grants, consumers and revisions through a served process."""

from __future__ import annotations

import json

import pytest
import yaml

from tests.contextctl.conftest import Cli, complete_words
from tests.contextctl.normalise import normalise
from tests.e2e.server import ServerProcess

pytestmark = [pytest.mark.e2e, pytest.mark.postgres]
REV = "ab" * 32
NS = ("-n", "ctl")


def test_create_get_list_delete(cli: Cli) -> None:
    made = cli("ctx", "create", "notes", *NS, "--type", "memory", "--size", "1024Mi",
               "--access-mode", "ReadWriteMany", "--storage-class", "fast")
    assert made.code == 0, made.err
    assert made.out == (
        "Context\n"
        "  Name:                notes\n"
        "  Namespace:           ctl\n"
        "  Type:                memory\n"
        "  Status:              provisioning\n"
        "  Storage:             1Gi ReadWriteMany\n"
        "  Storage class:       fast\n"
        "  Kubernetes resource: pvc/context-notes\n"
        "\n"
        "Inspect: kubectl -n ctl get pvc context-notes\n"
        "Hint: a WaitForFirstConsumer storage class binds the PVC after a workload mounts it.\n")
    shown = cli("ctx", "get", "notes", *NS)
    assert "  Access:              read,write,attach,derive,administer\n" in shown.out
    listed = cli("ctx", "ls", *NS)
    assert normalise(listed.out) == (
        "NAME  NAMESPACE  TYPE  STATUS  STORAGE  KUBERNETES RESOURCE\n"
        "notes  ctl  memory  provisioning  1Gi ReadWriteMany (fast)  pvc/context-notes\n")
    as_json = cli("ctx", "get", "notes", *NS, "--json")
    assert json.loads(as_json.out)["attachment"] == {"kind": "pvc", "claimName": "context-notes"}
    assert as_json.out.startswith('{"name":"notes","namespace":"ctl"')  # the service's bytes
    as_yaml = cli("ctx", "get", "notes", *NS, "-o", "yaml")
    assert yaml.safe_load(as_yaml.out) == json.loads(as_json.out)
    assert cli("ctx", "rm", "notes", *NS).out == "deleted notes\n"
    gone = cli("ctx", "get", "notes", *NS)
    assert (gone.code, gone.out, gone.err) == (1, "", "contextctl: context resource not found\n")


def test_context_names_complete_from_the_service(cli: Cli, service: ServerProcess,
                                                 monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    assert cli("ctx", "create", "alpha", "-n", "ctl-complete").code == 0
    assert cli("ctx", "create", "beta", "-n", "ctl-complete").code == 0
    words = "contextctl ctx get -n ctl-complete "
    assert complete_words(service.url, words, monkeypatch, capsys) == ["alpha", "beta"]
    words = "contextctl snapshot ls -n ctl-complete b"
    assert complete_words(service.url, words, monkeypatch, capsys) == ["beta"]
    unreachable = "http://127.0.0.1:9"
    assert complete_words(unreachable, "contextctl ctx get ", monkeypatch, capsys) == []


def test_namespace_from_environment_and_empty_list(cli: Cli) -> None:
    assert cli("ctx", "ls", CS_NAMESPACE="nobody-here").out == "No contexts found.\n"
    made = cli("ctx", "create", "envns", CS_NAMESPACE="from-env", CS_STORAGE_CLASS="slow")
    assert "  Namespace:           from-env\n  " in made.out
    assert "  Storage class:       slow\n" in made.out
    assert cli("ctx", "get", "envns", "-n", "from-env", "--json").code == 0


def test_service_validation_is_a_service_error(cli: Cli) -> None:
    bad = cli("ctx", "create", "Bad_Name", *NS)
    assert (bad.code, bad.err) == (
        1, "contextctl: name must be a lowercase Kubernetes name no longer than 50 characters\n")
    malformed = cli("ctx", "ls", *NS, subject="nobody")
    assert malformed.code == 1
    assert malformed.err == ("contextctl: X-Context-Subject must be kind:name with kind user, "
                             "agent, workload or service\n")


def test_grants_set_show_revoke(cli: Cli) -> None:
    assert cli("ctx", "create", "shared", *NS).code == 0
    granted = cli("ctx", "grant", "shared", "agent:bot", "-p", "read,attach,read", *NS)
    assert (granted.code, granted.out) == (0, "granted read,attach on shared to agent:bot\n")
    shown = cli("ctx", "grants", "shared", *NS)
    assert normalise(shown.out) == (
        "SUBJECT  PERMISSIONS  CREATED\n"
        "agent:bot  read,attach  <TIME>\n"
        "user:alice  read,write,attach,derive,administer  <TIME>\n")
    assert cli("ctx", "get", "shared", *NS, subject="agent:bot").code == 0
    assert cli("ctx", "revoke", "shared", "agent:bot", *NS).out == "revoked agent:bot on shared\n"
    hidden = cli("ctx", "get", "shared", *NS, subject="agent:bot")
    assert (hidden.code, hidden.err) == (1, "contextctl: context resource not found\n")
    again = cli("ctx", "revoke", "shared", "agent:bot", *NS)
    assert (again.code, again.err) == (1, "contextctl: context resource not found\n")


@pytest.mark.parametrize(("permissions", "message"), [
    ("write", 'permission "write" requires read'),
    ("read,own", 'unsupported permission "own"'),
    (",", "at least one permission is required"),
])
def test_grant_rules_are_usage_errors(cli: Cli, permissions: str, message: str) -> None:
    refused = cli("ctx", "grant", "any", "agent:bot", "--permissions", permissions, *NS)
    assert refused.code == 2
    assert refused.err.startswith(f"contextctl: Invalid value for --permissions: {message}\n")


def test_subject_must_be_kind_name(cli: Cli) -> None:
    refused = cli("ctx", "grant", "any", "robot", *NS)
    assert refused.code == 2
    assert "'robot' is not kind:name with kind user, agent, workload or service" in refused.err


def test_consumers_attach_detach_and_safe_delete(cli: Cli) -> None:
    assert cli("ctx", "create", "busy", *NS).code == 0
    attached = cli("ctx", "attach", "busy", "agent/summarizer", "--read-write", *NS)
    assert (attached.code, attached.out) == (0, "attached agent/summarizer to busy (readWrite)\n")
    listed = cli("ctx", "consumers", "busy", *NS)
    assert normalise(listed.out) == (
        "CONSUMER  SUBJECT  ACCESS  ACTIVE  DESIRED  SINCE\n"
        "agent/summarizer  user:alice  readWrite  false  true  <TIME>\n")
    refused = cli("ctx", "rm", "busy", *NS)
    assert refused.code == 1
    assert refused.err == ("contextctl: context resource is in use: busy is used by "
                           "agent/summarizer; detach consumers or use force deletion\n")
    assert cli("ctx", "detach", "busy", "agent/summarizer", *NS).out == (
        "detached agent/summarizer from busy\n")
    assert cli("ctx", "consumers", "busy", *NS).out == "No consumers found.\n"
    assert cli("ctx", "attach", "busy", "pod/p1", "--subject", "service:ns/sa", *NS).code == 0
    assert cli("ctx", "rm", "busy", "--force", *NS).out == "deleted busy\n"


def test_revisions_publish_and_list(cli: Cli, tmp_path: object) -> None:
    from pathlib import Path
    assert cli("ctx", "create", "docs", "--type", "knowledge", *NS).code == 0
    revision = Path(str(tmp_path)) / "revision.json"
    revision.write_text(json.dumps({"id": REV, "createdAt": "2026-03-01T09:00:00Z",
                                    "operation": "sync", "producer": "contextctl",
                                    "files": 3, "bytes": 2048}))
    published = cli("ctx", "publish", "docs", str(revision), *NS)
    assert (published.code, published.out) == (0, f"published revision {REV} to docs\n")
    listed = cli("ctx", "revisions", "docs", *NS)
    assert normalise(listed.out) == (
        "ID  CREATED  OPERATION  PRODUCER  FILES  BYTES\n"
        f"{REV[:12]}  <TIME>  sync  contextctl  3  2048\n")
    revision.write_text("[1]")
    wrong = cli("ctx", "publish", "docs", str(revision), *NS)
    assert wrong.code == 2 and "must hold one JSON object" in wrong.err
    revision.write_text(json.dumps({"id": "nope", "createdAt": "2026-03-01T09:00:00Z",
                                    "operation": "sync"}))
    invalid = cli("ctx", "publish", "docs", str(revision), *NS)
    assert invalid.err == "contextctl: revision id must be a lowercase SHA-256 digest\n"

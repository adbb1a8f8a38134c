"""``serve`` publishes every event to its embedded NATS; ``events tail`` prints them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.server import ServerProcess, context, free_port

pytestmark = [pytest.mark.e2e, pytest.mark.nats, pytest.mark.postgres]


def test_serve_publishes_and_tail_prints(data_dir: Path, database_url: str) -> None:
    data = data_dir
    listen = f"127.0.0.1:{free_port()}"
    server = ServerProcess(data, env={"CS_WORKERS": "projections,relay",
                                      "CS_NATS_LISTEN": listen})
    # the suite's PostgreSQL: the embedded NATS is the point here, not the embedded database
    server.env["CS_DATABASE_URL"] = database_url
    try:
        server.start()
        with server.client() as http:
            assert http.post("/v1/contexts", json=context("notes")).status_code == 201
            grant = {"subject": {"kind": "agent", "name": "bot"}, "permissions": ["read"]}
            http.put("/v1/namespaces/e2e/contexts/notes/grants", json=grant)
        tail = subprocess.run(
            [sys.executable, "-m", "context_service.cli", "events", "tail", "--limit", "2",
             "--subject", "context.events.e2e.>"],
            env={**server.env, "CS_NATS_URL": f"nats://{listen}"}, capture_output=True,
            timeout=60, check=True)
        lines = [json.loads(line) for line in tail.stdout.splitlines()]
        assert [e["name"] for e in lines] == ["ContextCreated", "AccessGranted"]
        assert [e["position"] for e in lines] == [1, 2]
        assert lines[1]["actor"] == "user:anonymous"
        assert (data / "nats").is_dir()
        with server.client() as http:
            metrics = http.get("/metrics").text
        assert "cs_relay_position 2" in metrics
        assert "cs_relay_checkpoint 2" in metrics  # saved once caught up
    finally:
        server.stop()
        server.cleanup()

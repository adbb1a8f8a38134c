"""Schemathesis against the served OpenAPI document: generated requests for every operation
(examples, coverage, fuzzing and the stateful phase that follows the document's links) find no
5xx, no response the document does not describe (status, content type, headers, body), no valid
request refused and no invalid one accepted; and the stateful phase reaches every operation past
a 404."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.server import ServerProcess

pytestmark = [pytest.mark.e2e, pytest.mark.k8s, pytest.mark.postgres, pytest.mark.slow]
EXAMPLES = 15
CONFIG = Path(__file__).with_name("schemathesis.toml")


@pytest.fixture
def served(tmp_path: Path, database_url: str, kubeconfig: Path, kube_ns: str
           ) -> Iterator[ServerProcess]:
    proc = ServerProcess(tmp_path, env={
        "CS_KUBE": "kubeconfig", "KUBECONFIG": str(kubeconfig), "CS_NAMESPACE": kube_ns,
        "CS_WORKERS": "projections,query-index", "CS_READ_WAIT_SECONDS": "5"})
    proc.env["CS_DATABASE_URL"] = database_url
    proc.start()
    yield proc
    proc.stop()


def test_every_operation_conforms_to_the_document(served: ServerProcess, tmp_path: Path) -> None:
    reports = tmp_path / "reports"
    run = subprocess.run(
        [str(Path(sys.executable).parent / "st"), "--config-file", str(CONFIG), "run",
         served.url + "/schema/openapi.json", "--checks", "all",
         "--exclude-checks", "negative_data_rejection", "--max-examples", str(EXAMPLES),
         "--seed", "1", "--workers", "1",
         "--generation-database", "none", "--no-color", "--request-timeout", "20",
         "--report", "har", "--report-dir", str(reports)],
        capture_output=True, text=True, timeout=600, cwd=tmp_path)  # its cache stays there
    (tmp_path / "schemathesis.txt").write_text(run.stdout + run.stderr)
    assert run.returncode == 0, run.stdout[-20000:]
    reached = _statuses_per_operation(next(reports.glob("*.har")))
    hidden = sorted(op for op, statuses in reached.items() if statuses <= {404, 405})
    assert hidden == [], f"never past a 404: {hidden}"


def _statuses_per_operation(har: Path) -> dict[str, set[int]]:
    found: dict[str, set[int]] = defaultdict(set)
    for entry in json.loads(har.read_text())["log"]["entries"]:
        request = entry["request"]
        found[f"{request['method']} {request['url']}"].add(entry["response"]["status"])
    return found

"""Schemathesis against the served OpenAPI document: generated requests for every operation
(examples, coverage, fuzzing and the stateful phase that follows the document's links) find no
5xx, no response the document does not describe (status, content type, headers, body), no valid
request refused and no invalid one accepted; and the run reaches every operation past a 404 or
401, workspace and agent routes included (as the seeded workspace's owner and its credential).
``/mcp`` is not in the document (one JSON-RPC endpoint, not a REST operation): its tool calls are
fuzzed from the tools' input schemas by tests/api/agent_mcp/test_mcp_fuzz.py."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from context_service.adapters.kubernetes.cluster import SNAPSHOT_CLASS, KubernetesCluster
from context_service.adapters.kubernetes.rest import STORAGE_CLASSES
from context_service.contract.values import DATE
from tests.e2e.server import ServerProcess
from tests.support.hypothesis_profiles import scaled

pytestmark = [pytest.mark.e2e, pytest.mark.k8s, pytest.mark.postgres, pytest.mark.slow]
# examples an operation in the fuzzing and stateful phases (the coverage phase's cases do not
# depend on it): five reach every operation past 404 and 401 (asserted below), the thorough
# profile generates twenty times as many
EXAMPLES = scaled(5)
ROOT = Path(__file__).parents[2]
# negative_data_rejection: sizes and durations are documented by patterns narrower than the
# rule (no regular expression states it exactly), so some values outside them are valid.
# use_after_free: DELETE .../grants and .../consumers remove one entry, the list stays.
EXCLUDED = "negative_data_rejection,use_after_free"
CONFIG = Path(__file__).with_name("schemathesis.toml")
# Work of the schemathesis process that changes nothing it generates, sends or checks, cut:
# hypothesis's tables of the characters a codec encodes (some 2 s for utf-8 and ascii, computed
# once into its storage directory: the suite's, not one in the test's cwd that dies with it; the
# examples database stays off); and, per request, a search for a proxy through every environment
# variable, twice (a second in all), which a server on 127.0.0.1 is never reached through.
ST_OVERHEAD = {"HYPOTHESIS_STORAGE_DIRECTORY": str(ROOT / ".hypothesis"), "no_proxy": "127.0.0.1"}
ADMIN = {"X-Context-Subject": "service:context-service-admin"}
# what a request that never got in answers: the resource is absent or hidden, or no credential
SHUT_OUT = {401, 404, 405}
# the seeded context's revision: the digest schemathesis sends first, so a query index is
# published for it (a revision published during the run is found only by a link, if followed)
ZERO_DIGEST = "0" * 64


@pytest.fixture
def storage_class(kube_cluster: KubernetesCluster, kube_ns: str) -> Iterator[str]:
    """A StorageClass and a VolumeSnapshotClass of one driver (cluster-scoped: named after the
    test's namespace), so contexts of that class can be snapshotted."""
    rest, name, driver = kube_cluster.rest, f"{kube_ns}-sc", f"{kube_ns}.csi.example"
    rest.create(STORAGE_CLASSES.path(), {"apiVersion": "storage.k8s.io/v1",
                                         "kind": "StorageClass", "metadata": {"name": name},
                                         "provisioner": driver}, "test")
    rest.create(SNAPSHOT_CLASS.path(), {"apiVersion": "snapshot.storage.k8s.io/v1",
                                        "kind": "VolumeSnapshotClass",
                                        "metadata": {"name": f"{kube_ns}-snap"},
                                        "driver": driver, "deletionPolicy": "Delete"}, "test")
    yield name
    rest.delete(SNAPSHOT_CLASS.path(None, f"{kube_ns}-snap"))
    rest.delete(STORAGE_CLASSES.path(None, name))


@pytest.fixture
def served(tmp_path: Path, database_url: str, kubeconfig: Path, kube_ns: str
           ) -> Iterator[ServerProcess]:
    proc = ServerProcess(tmp_path, env={
        "CS_KUBE": "kubeconfig", "KUBECONFIG": str(kubeconfig), "CS_NAMESPACE": kube_ns,
        "CS_WORKERS": "projections,query-index", "CS_READ_WAIT_SECONDS": "5",
        "CS_AGENT_RATE_PER_SECOND": "0",  # the limits have tests of their own
        "CS_AUTH_FAILURE_PER_SECOND": "0"})
    proc.env["CS_DATABASE_URL"] = database_url
    proc.start()
    yield proc
    proc.stop()


def test_every_operation_conforms_to_the_document(served: ServerProcess, storage_class: str,
                                                  tmp_path: Path) -> None:
    token = _seed(served, storage_class)
    reports = tmp_path / "reports"
    output = tmp_path / "schemathesis.txt"
    with output.open("w") as out:
        run = subprocess.run(
            [str(Path(sys.executable).parent / "st"), "--config-file", str(CONFIG), "run",
             served.url + "/schema/openapi.json", "--checks", "all",
             "--exclude-checks", EXCLUDED, "--max-examples", str(EXAMPLES),
             "--seed", "1", "--workers", "1", "--generation-database", "none", "--no-color",
             "--request-timeout", "20", "--report", "har", "--report-dir", str(reports)],
            stdout=out, stderr=subprocess.STDOUT, timeout=240, cwd=tmp_path,  # its cache too
            env={**os.environ, **ST_OVERHEAD, "PYTHONPATH": str(ROOT),
                 "CS_FUZZ_STORAGE_CLASS": storage_class, "CS_FUZZ_TOKEN": token,
                 "SCHEMATHESIS_HOOKS": "tests.contract.schemathesis_hooks"})
    assert run.returncode == 0, output.read_text()[-20000:]
    document = httpx.get(served.url + "/schema/openapi.json").json()
    reached = _statuses_per_operation(document, next(reports.glob("har-*.json")))
    operations = [op["operationId"] for ops in document["paths"].values() for op in ops.values()]
    assert len(set(operations)) == len(operations), "operation ids are not unique"
    assert set(reached) == set(operations)
    print(_figures(reached))  # shown with -s: how far each operation got
    hidden = sorted(op for op, statuses in reached.items()
                    if set(statuses) <= SHUT_OUT and op in _reachable(document))
    assert hidden == [], f"never past a 404 or 401: {hidden}\n{_figures(reached)}"
    assert _dated(document) <= _may_refuse_valid(), "a request's date is refused with 400"


def _dated(document: dict[str, Any]) -> set[str]:
    """Operations a request of which holds a date (a time's, a template default's, a knownAt):
    the document takes every day 01-31 of every month, so a date that does not exist is
    documented-valid and the route's 400."""
    components = document["components"]["schemas"]
    return {op["operationId"] for ops in document["paths"].values() for op in ops.values()
            if any(DATE in pattern for pattern in _patterns(
                [op.get("requestBody"), op.get("parameters")], components, set()))}


def _patterns(node: Any, components: dict[str, Any], seen: set[str]) -> Iterator[str]:
    if isinstance(node, list):
        for item in node:
            yield from _patterns(item, components, seen)
    elif isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref not in seen:
            seen.add(ref)
            yield from _patterns(components[ref.rsplit("/", 1)[1]], components, seen)
        if isinstance(node.get("pattern"), str):
            yield node["pattern"]
        for key, value in node.items():
            if key != "$ref":
                yield from _patterns(value, components, seen)


def _may_refuse_valid() -> set[str]:
    """The operations schemathesis.toml lets answer a valid request with 400."""
    found = set()
    for entry in tomllib.loads(CONFIG.read_text()).get("operations", ()):
        statuses = entry.get("checks", {}).get("positive_data_acceptance", {})
        if "400" in statuses.get("expected-statuses", ()):
            ids = entry["include-operation-id"]
            found.update([ids] if isinstance(ids, str) else ids)
    return found


def _reachable(document: dict[str, Any]) -> set[str]:
    """Operations a run must get past 404 and 401: those without path parameters, those some
    link leads to and those whose every path parameter schemathesis.toml fixes (an operation
    added without a resource in ``openapi_links`` is fuzzed all the same, but nothing in the
    document says how to reach it)."""
    pinned = [(re.compile(entry["include-path-regex"]), set(entry["parameters"]))
              for entry in tomllib.loads(CONFIG.read_text()).get("operations", ())
              if "include-path-regex" in entry and "parameters" in entry]
    found = set()
    for path, ops in document["paths"].items():
        wanted = {f"path.{name}" for name in re.findall(r"\{(\w+)\}", path)}
        fixed = any(pattern.search(path) and wanted <= names for pattern, names in pinned)
        for op in ops.values():
            if not wanted or fixed:
                found.add(op["operationId"])
            for response in op["responses"].values():
                found.update(link["operationId"] for link in response.get("links", {}).values())
    return found


def _figures(reached: dict[str, Counter[int]]) -> str:
    """Per operation: generated cases, those past 404/401, those answered 2xx."""
    lines = [f"{'operation':28} {'cases':>6} {'past':>6} {'2xx':>6}"]
    for op, statuses in sorted(reached.items()):
        past = sum(n for status, n in statuses.items() if status not in SHUT_OUT)
        ok = sum(n for status, n in statuses.items() if 200 <= status < 300)
        lines.append(f"{op:28} {statuses.total():6} {past:6} {ok:6}")
    return "\n".join(lines)


def _seed(served: ServerProcess, storage_class: str) -> str:
    """The context, revision and snapshot schemathesis.toml names; the workspace
    ``fuzz`` with ``user:fuzz`` its owner and a context set; and an agent credential of that
    owner (returned: its token), so agent routes get past 401."""
    headers = {"X-Context-Subject": "user:fuzz"}
    body = {"name": "seeded", "namespace": "fuzz", "type": "memory", "storage": {
        "backend": "pvc", "size": "1Gi", "accessMode": "ReadWriteOnce",
        "storageClass": storage_class}}
    with httpx.Client(base_url=served.url, headers=headers) as http:
        assert http.post("/v1/contexts", json=body).status_code == 201
        taken = http.post("/v1/namespaces/fuzz/contexts/seeded/snapshots",
                          json={"name": "seeded-snap"})
        assert taken.status_code == 201, taken.text
        published = http.post("/v1/namespaces/fuzz/contexts/seeded/revisions", json={
            "id": ZERO_DIGEST, "createdAt": "2026-01-01T00:00:00Z", "operation": "sync"})
        assert published.status_code == 201, published.text
        owner = http.put("/v1/namespaces/fuzz/members", headers=ADMIN,
                         json={"subject": {"kind": "user", "name": "fuzz"}, "role": "owner"})
        assert owner.status_code == 200, owner.text
        curated = http.post("/v1/namespaces/fuzz/context-sets", json={
            "id": "seeded-set", "name": "seeded", "collections": ["seeded"],
            "definitions": [{"term": "fuzz", "definition": "generated input"}],
            "verifiedAnswers": [{"id": "who", "question": "who fuzzes", "answer": "schemathesis"}]})
        assert curated.status_code == 201, curated.text
        credential = http.post("/api/w/fuzz/agent-credentials", json={
            "name": "fuzz", "scopes": ["context:read", "queries:run"], "expiresInDays": 1})
        assert credential.status_code == 201, credential.text
        return str(credential.json()["token"])


def _statuses_per_operation(document: dict[str, Any], har: Path) -> dict[str, Counter[int]]:
    """How often each documented operation answered each status during the run."""
    routes = [(method.upper(), re.compile("^" + re.sub(r"\\\{\w+\\\}", "[^/]+", re.escape(path))
                                          + "$"), op["operationId"])
              for path, ops in document["paths"].items() for method, op in ops.items()]
    found: dict[str, Counter[int]] = defaultdict(Counter)
    for entry in json.loads(har.read_text())["log"]["entries"]:
        request = entry["request"]
        path = urlsplit(request["url"]).path
        for method, pattern, operation in routes:
            if request["method"] == method and pattern.match(path):
                found[operation][entry["response"]["status"]] += 1
                break
    return found

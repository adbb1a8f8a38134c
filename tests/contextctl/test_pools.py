"""The pool commands against a service reconciling a real kube-apiserver, with the development
stand-in making sandboxes ready: golden transcripts of their text and error messages, ``wait``
following a pool to ``ready``, and the console script as a process."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from context_service.adapters.kubernetes.cluster import KubernetesCluster
from context_service.contextctl import pools
from context_service.devcluster.controlplane import ControlPlane
from context_service.devcluster.devsim import DevSimulator
from tests.contextctl.conftest import Cli, complete_words, kube_service, make_cli
from tests.contextctl.golden import check, transcript
from tests.e2e.server import ServerProcess
from tests.support.pool_fixtures import Seed, eventually

pytestmark = [pytest.mark.e2e, pytest.mark.postgres, pytest.mark.k8s]
NAMESPACE = "ctl-pools"


@pytest.fixture(scope="module")
def service(module_dir: Path, module_database_url: str, plane: ControlPlane,
            kube: KubernetesCluster) -> Iterator[ServerProcess]:
    proc = kube_service(module_dir, module_database_url, plane, kube, NAMESPACE)
    seed = Seed(kube.rest, NAMESPACE)
    seed.claim("prepared", size="2Gi")
    seed.template("researcher")
    seed.warm_pool("research-agents", "researcher")
    yield proc
    proc.cleanup()


@pytest.fixture(scope="module")
def simulator(service: ServerProcess, kube: KubernetesCluster) -> Iterator[DevSimulator]:
    """Started only by the tests that want pools to become ready."""
    sim = DevSimulator(kube.rest, NAMESPACE).start(interval=0.3)
    yield sim
    sim.stop()


@pytest.fixture
def cli(service: ServerProcess, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> Cli:
    return make_cli(service.url, monkeypatch, capsys)


@pytest.fixture
def ready_soon(simulator: DevSimulator, monkeypatch: pytest.MonkeyPatch) -> DevSimulator:
    """Pools become ready, and ``wait`` looks every 0.05 s instead of every 2 s, so it returns
    once they are (the golden ``wait -t 1s`` of the first test keeps the 2 s interval: its one
    line is the point of that transcript)."""
    monkeypatch.setattr(pools, "POLL_SECONDS", 0.05)
    return simulator


def test_1_before_sandboxes_run(cli: Cli) -> None:
    """No stand-in yet: every pool stays provisioning, so ``wait`` times out."""
    check("pools-provisioning", transcript(cli, [
        ["health"],
        ["create", "demo", "--shared"],
        ["create", "--replicas", "1", "-s", "2Gi", "solo"],
        ["get", "demo"],
        ["wait", "demo", "-t", "1s"],
        ["ls"],
        ["create", "demo"],
        ["get", "missing"],
        ["rm", "missing"],
        ["create", "Not_A_Name"],
        ["create", "many", "-n", "101"],
        ["create", "ghost", "--warm-pool", "no-such-pool"],
        ["create", "ghost", "--claim", "no-such-claim", "--read-only"],
        ["create", "ghost", "--sandbox-profile", "no-such-profile"],
    ]))


def test_2_usage_errors(cli: Cli) -> None:
    warm = ["create", "x", "--warm-pool", "wp"]
    check("pools-usage", transcript(cli, [
        [*warm, "--shared"],
        [*warm, "-s", "2Gi"],
        [*warm, "--workspace-size", "2Gi"],
        [*warm, "-c", "fast"],
        [*warm, "--claim", "c"],
        [*warm, "--read-only"],
        [*warm, "--read-write"],
        [*warm, "--sandbox-profile", "p"],
        ["create", "x", "--claim", "c"],
        ["create", "x", "--claim", "c", "--read-only", "--read-write"],
        ["create", "x", "--claim", "c", "--read-only", "--shared"],
        ["create", "x", "--read-only"],
        ["create"],
        ["create", "x", "-n", "two"],
        ["wait", "x", "-t", "soon"],
        ["get", "a", "b"],
        ["frobnicate"],
    ]))


def test_3_wait_follows_the_pool_to_ready(cli: Cli, ready_soon: DevSimulator) -> None:
    waited = cli("wait", "demo", "--timeout", "1m")
    assert waited.code == 0, waited.err
    lines = waited.out.splitlines()
    assert lines[-1] == "demo: ready (2/2 ready)"
    assert all(re.fullmatch(r"demo: provisioning \([01]/2 ready\)", line) for line in lines[:-1])


def test_pool_names_complete_from_the_service(service: ServerProcess,
                                              monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    assert complete_words(service.url, "contextctl wait d", monkeypatch, capsys) == ["demo"]
    assert complete_words(service.url, "contextctl sb rm ", monkeypatch, capsys) == [
        "demo", "solo"]


def test_4_ready_pools_and_other_strategies(cli: Cli, ready_soon: DevSimulator) -> None:
    eventually(lambda: cli("get", "solo", "--json").out.find('"status":"ready"') > 0,
               timeout=60)
    check("pools-ready", transcript(cli, [
        ["get", "demo"],
        ["wait", "demo"],
        ["sb", "get", "solo"],
        ["ls"],
        ["rm", "demo"],
        ["delete", "solo"],
        ["get", "demo"],
        ["ls"],
        ["create", "readers", "--claim", "prepared", "--read-only", "-n", "2"],
        ["create", "fast", "--warm-pool", "research-agents"],
    ]))
    for name, replicas in (("readers", 2), ("fast", 1)):
        waited = cli("wait", name, "-t", "1m")
        assert waited.out.splitlines()[-1] == f"{name}: ready ({replicas}/{replicas} ready)"
        assert cli("sandbox-pool", "rm", name).out == f"deleted {name}\n"


def test_json_is_the_service_body(cli: Cli, service: ServerProcess,
                                  ready_soon: DevSimulator) -> None:
    made = cli("create", "raw", "--json", "-n", "1", "-c", "standard")
    assert made.out == (
        '{"name":"raw","status":"provisioning","replicas":1,"readyReplicas":0,'
        '"sandboxSelector":"context.rossoctl.io/pool=raw",'
        '"workspace":{"size":"1Gi","accessMode":"ReadWriteOnce","storageClass":"standard"}}\n')
    assert cli("wait", "raw", "-t", "1m").code == 0
    with service.client() as http:
        body = http.get("/v1/sandbox-pools/raw").text
    assert cli("get", "raw", "--json").out == body + "\n"
    assert cli("get", "raw", "-o", "yaml").out.startswith("name: raw\nstatus: ready\n")
    assert cli("rm", "raw").code == 0


def test_storage_classes(cli: Cli) -> None:
    listed = cli("storage-class", "ls")
    assert listed.code == 0
    assert listed.out.splitlines()[0].split() in (
        ["No", "storage", "classes", "found."],
        ["NAME", "DEFAULT", "PROVISIONER", "BINDING", "MODE", "EXPANSION"])
    assert cli("sc", "list", "--json").out.startswith('{"items":[')


def test_console_script_as_a_process(service: ServerProcess) -> None:
    """The real entry point: exit codes, stderr, the environment, ``--version``."""
    env = {**os.environ, "CS_URL": service.url, "CS_TOKEN": "secret"}

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "context_service.contextctl", *args],
                              env=env, capture_output=True, text=True, timeout=60)

    assert run("health").stdout == "ok\n"
    missing = run("get", "nothing-here")
    assert (missing.returncode, missing.stdout, missing.stderr) == (
        1, "", "contextctl: sandbox pool not found\n")
    usage = run("create", "x", "--warm-pool", "w", "--shared")
    assert usage.returncode == 2
    assert usage.stderr.startswith("contextctl: --warm-pool cannot be combined with --shared\n")
    version = run("--version")
    assert re.fullmatch(r"contextctl \d+\.\d+\.\d+\S*\n", version.stdout)
    env["CS_URL"] = "http://127.0.0.1:9"
    unreachable = run("health")
    assert unreachable.returncode == 1
    assert unreachable.stderr.startswith(
        "contextctl: cannot reach the context service at http://127.0.0.1:9: ")

"""``deploy/`` as an operator renders it: the Roles grant exactly the adapter's access table,
every worker has its Deployment, probes and settings match the code, and the real API server
accepts every object without dropping a field (``kubectl apply --dry-run=server``)."""

from __future__ import annotations

import base64
import json
import pathlib
from typing import Any

import pytest
import yaml

from context_service.adapters.kubernetes.access import GRANTS, QUERY_MIRROR, permissions
from context_service.adapters.kubernetes.rest import JSON
from context_service.config import Settings
from context_service.devcluster.controlplane import ControlPlane
from tests.support.deploy import SERVICE_ACCOUNT, kubectl, named, of_kind, render

NS = "cs-prod"
API = "context-service-api"


@pytest.fixture(scope="module")
def docs(tmp_path_factory: pytest.TempPathFactory) -> list[JSON]:
    return render(tmp_path_factory.mktemp("overlay"), NS)


def granted(role: JSON) -> set[tuple[str, str, str]]:
    return {(group, resource, verb) for rule in role["rules"] for group in rule["apiGroups"]
            for resource in rule["resources"] for verb in rule["verbs"]}


def pod(deployment: JSON) -> JSON:
    spec: JSON = deployment["spec"]["template"]["spec"]
    return spec


def container_env(deployment: JSON) -> dict[str, Any]:
    [container] = pod(deployment)["containers"]
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container.get("env", [])}


def decoded(secret: JSON) -> dict[str, str]:
    return {k: base64.b64decode(v).decode() for k, v in secret["data"].items()}


def worker_names() -> tuple[str, ...]:
    return Settings().workers  # the default CS_WORKERS: every worker there is


def test_roles_grant_exactly_the_adapter_access_table(
        docs: list[JSON], tmp_path: pathlib.Path) -> None:
    assert [r["metadata"]["name"] for r in of_kind(docs, "ClusterRole")] == ["context-service"]
    assert [r["metadata"]["name"] for r in of_kind(docs, "Role")] == ["context-service"]
    assert granted(named(docs, "ClusterRole", "context-service")) == permissions("cluster")
    assert granted(named(docs, "Role", "context-service")) == permissions("service-namespace")

    mirrored = render(tmp_path, NS, mirror=True)
    extra = named(mirrored, "ClusterRole", "context-service-query-mirror")
    assert granted(extra) == permissions("cluster", QUERY_MIRROR)
    assert permissions("service-namespace", QUERY_MIRROR) == set()
    every = [*of_kind(mirrored, "ClusterRole"), *of_kind(mirrored, "Role")]
    assert set().union(*(granted(r) for r in every)) == {
        (g.resource.group, g.resource.plural, v) for g in GRANTS for v in g.verbs}
    assert not any("*" in str(rule) for role in every for rule in role["rules"])


def test_every_role_is_bound_to_the_service_account(tmp_path: pathlib.Path) -> None:
    docs = render(tmp_path, NS, mirror=True)
    bindings = [*of_kind(docs, "ClusterRoleBinding"), *of_kind(docs, "RoleBinding")]
    bound = {(b["roleRef"]["kind"], b["roleRef"]["name"]) for b in bindings}
    roles = {(r["kind"], r["metadata"]["name"]) for r in [*of_kind(docs, "ClusterRole"),
                                                           *of_kind(docs, "Role")]}
    assert bound == roles
    for binding in bindings:
        assert binding["subjects"] == [
            {"kind": "ServiceAccount", "name": SERVICE_ACCOUNT, "namespace": NS}]
    assert named(docs, "RoleBinding", "context-service")["metadata"]["namespace"] == NS


def test_one_deployment_for_the_api_and_one_per_worker(docs: list[JSON]) -> None:
    deployments = {d["metadata"]["name"]: d for d in of_kind(docs, "Deployment")}
    assert set(deployments) == {API, *(f"context-service-{w}" for w in worker_names())}
    api = deployments.pop(API)
    [server] = pod(api)["containers"]
    assert server["command"] == ["context-service", "serve"]
    assert container_env(api)["CS_WORKERS"] == ""
    for name, deployment in deployments.items():
        [worker] = pod(deployment)["containers"]
        assert worker["command"] == ["context-service", "worker", name.split("-", 2)[2]]
    for deployment in of_kind(docs, "Deployment"):
        [container] = pod(deployment)["containers"]
        assert container["image"] == "registry.test/context-service:0.1.0"  # the placeholder
        assert container_env(deployment)["CS_NAMESPACE"] == {
            "fieldRef": {"fieldPath": "metadata.namespace"}}


def test_api_probes_and_service(docs: list[JSON]) -> None:
    api = named(docs, "Deployment", API)
    [server] = pod(api)["containers"]
    assert server["ports"] == [{"name": "http", "containerPort": 8080, "protocol": "TCP"}]
    assert container_env(api)["CS_LISTEN_ADDR"] == "0.0.0.0:8080"
    assert server["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}
    assert server["startupProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}
    assert server["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "http"}
    [service] = of_kind(docs, "Service")
    assert service["spec"]["ports"] == [
        {"name": "http", "port": 8080, "targetPort": "http", "protocol": "TCP"}]
    selector = service["spec"]["selector"].items()
    selected = [d["metadata"]["name"] for d in of_kind(docs, "Deployment")
                if selector <= d["spec"]["template"]["metadata"]["labels"].items()]
    assert selected == [API]


def test_only_processes_that_talk_to_kubernetes_get_a_token(docs: list[JSON]) -> None:
    with_token = set()
    for deployment in of_kind(docs, "Deployment"):
        spec, mode = pod(deployment), container_env(deployment)["CS_KUBE"]
        if mode == "in-cluster":
            assert spec["serviceAccountName"] == SERVICE_ACCOUNT
            assert spec["automountServiceAccountToken"] is True
            with_token.add(deployment["metadata"]["name"])
        else:
            assert mode == "off"
            assert spec["automountServiceAccountToken"] is False
            assert "serviceAccountName" not in spec
    assert with_token == {API, "context-service-reconciler", "context-service-snapshots"}
    [account] = of_kind(docs, "ServiceAccount")
    assert account["automountServiceAccountToken"] is False


def test_settings_come_from_the_config_map_and_the_secret(docs: list[JSON]) -> None:
    [config] = of_kind(docs, "ConfigMap")
    [secret] = of_kind(docs, "Secret")
    assert set(secret["data"]) == {"CS_DATABASE_URL", "CS_NATS_URL"}
    assert not {"CS_DATABASE_URL", "CS_NATS_URL"} & set(config["data"])
    secrets = decoded(secret)
    for deployment in of_kind(docs, "Deployment"):
        [container] = pod(deployment)["containers"]
        assert container["envFrom"] == [
            {"configMapRef": {"name": config["metadata"]["name"]}},
            {"secretRef": {"name": secret["metadata"]["name"]}}]
        env = {k: v for k, v in container_env(deployment).items() if isinstance(v, str)}
        settings = Settings.from_env({**config["data"], **secrets, **env, "CS_NAMESPACE": NS})
        assert settings.database_url is not None and settings.database_url.startswith(
            "postgresql://")
        assert settings.nats_url is not None and settings.nats_url.startswith("nats://")
        assert settings.data_dir == pathlib.Path("/var/lib/context-service")
        if deployment["metadata"]["name"] == API:
            assert (settings.workers, settings.listen_port) == ((), 8080)
            assert settings.sandbox_image


def test_containers_run_unprivileged_on_a_read_only_root(docs: list[JSON]) -> None:
    for deployment in of_kind(docs, "Deployment"):
        spec = pod(deployment)
        assert spec["securityContext"]["runAsNonRoot"] is True
        assert spec["securityContext"]["runAsUser"] == 65532
        [container] = spec["containers"]
        assert container["securityContext"] == {
            "allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True,
            "capabilities": {"drop": ["ALL"]}}
        mounts = {m["mountPath"] for m in container["volumeMounts"]}
        assert mounts == {"/var/lib/context-service", "/tmp"}


def contained(wrote: Any, kept: Any, where: str = "") -> list[str]:
    """Where ``kept`` (the server's answer) lacks or changed something of ``wrote``. An empty
    string the server leaves out is kept (``omitempty``: an env var with no value is empty)."""
    if isinstance(wrote, dict):
        if not isinstance(kept, dict):
            return [where]
        return [miss for k, v in wrote.items()
                for miss in (contained(v, kept[k], f"{where}.{k}") if k in kept
                             else [] if v == "" else [f"{where}.{k}"])]
    if isinstance(wrote, list):
        if not isinstance(kept, list) or len(kept) != len(wrote):
            return [where]
        return [m for i, (a, b) in enumerate(zip(wrote, kept, strict=True))
                for m in contained(a, b, f"{where}[{i}]")]
    return [] if wrote == kept else [f"{where}: {wrote!r} became {kept!r}"]


@pytest.mark.k8s
def test_the_server_accepts_every_object_and_keeps_every_field(
        kube_server: ControlPlane, kube_ns: str, tmp_path: pathlib.Path) -> None:
    rendered = render(tmp_path, kube_ns, mirror=True)
    out = kubectl("apply", "--dry-run=server", "-o", "json", "-f", "-",
                  kubeconfig=kube_server.kubeconfig, stdin=yaml.safe_dump_all(rendered))
    answer = json.loads(out)
    items = answer["items"] if answer["kind"] == "List" else [answer]
    by_key = {(i["kind"], i["metadata"]["name"]): i for i in items}
    assert set(by_key) == {(d["kind"], d["metadata"]["name"]) for d in rendered}
    for doc in rendered:  # 1.20 drops unknown fields silently: a typo would vanish here
        kept = by_key[(doc["kind"], doc["metadata"]["name"])]
        if doc["kind"] == "Secret":  # base64 line breaks are not data
            doc, kept = {**doc, "data": decoded(doc)}, {**kept, "data": decoded(kept)}
        assert contained(doc, kept) == [], doc["metadata"]["name"]

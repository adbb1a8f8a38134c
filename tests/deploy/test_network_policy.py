"""``deploy/networkpolicy.yaml`` as an operator renders it: the API admits only the gateway's
namespace and the service's own Pods, the workers only the service's own Pods, and no sandbox
pod (in the service's namespace, which is ``CS_NAMESPACE``, or in ``serverless-harness``) ever
reaches either. The rules are evaluated here with the NetworkPolicy semantics of Kubernetes
(selectors, peers, ports); ``test_manifests.py`` has the API server accept the objects."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from context_service.adapters.kubernetes.manifests import pool_labels
from context_service.adapters.kubernetes.rest import JSON
from context_service.config import Settings
from tests.support.deploy import of_kind, render

NS = "cs-prod"
GATEWAY_LABEL = {"context-service/gateway": "true"}
PORTS = {"http": 8080}  # the API container's named ports


@dataclass(frozen=True)
class Pod:
    namespace: str
    labels: dict[str, str]
    namespace_labels: dict[str, str] = field(default_factory=dict)

    @property
    def all_namespace_labels(self) -> dict[str, str]:
        """As Kubernetes 1.21+ labels every namespace: its name, plus what the operator set."""
        return {"kubernetes.io/metadata.name": self.namespace, **self.namespace_labels}


@pytest.fixture(scope="module")
def docs(tmp_path_factory: pytest.TempPathFactory) -> list[JSON]:
    return render(tmp_path_factory.mktemp("overlay"), NS)


@pytest.fixture(scope="module")
def policies(docs: list[JSON]) -> list[JSON]:
    return of_kind(docs, "NetworkPolicy")


@pytest.fixture(scope="module")
def own_pods(docs: list[JSON]) -> dict[str, Pod]:
    """Each Deployment's Pod, by Deployment name."""
    return {d["metadata"]["name"]: Pod(NS, d["spec"]["template"]["metadata"]["labels"])
            for d in of_kind(docs, "Deployment")}


def matches(selector: JSON, labels: dict[str, str]) -> bool:
    """A LabelSelector: every matchLabels pair and every matchExpressions requirement."""
    if any(labels.get(k) != v for k, v in (selector.get("matchLabels") or {}).items()):
        return False
    for expression in selector.get("matchExpressions") or []:
        key, operator, values = expression["key"], expression["operator"], expression.get(
            "values", [])
        held = key in labels
        if operator == "In" and not (held and labels[key] in values):
            return False
        if operator == "NotIn" and held and labels[key] in values:
            return False
        if operator == "Exists" and not held:
            return False
        if operator == "DoesNotExist" and held:
            return False
    return True


def peer_admits(peer: JSON, policy_namespace: str, source: Pod) -> bool:
    assert "ipBlock" not in peer  # the manifests admit by identity only
    namespaces, pods = peer.get("namespaceSelector"), peer.get("podSelector")
    if namespaces is None:
        in_namespace = source.namespace == policy_namespace
    else:
        in_namespace = matches(namespaces, source.all_namespace_labels)
    return in_namespace and (pods is None or matches(pods, source.labels))


def port_admits(rule: JSON, port: int) -> bool:
    ports = rule.get("ports")
    return not ports or any(PORTS.get(p["port"], p["port"]) == port
                            and p.get("protocol", "TCP") == "TCP" for p in ports)


def reaches(policies: list[JSON], source: Pod, target: Pod, port: int = 8080) -> bool:
    """Whether ``source`` may open a TCP connection to ``target``'s ``port``."""
    selecting = [p for p in policies if p["metadata"]["namespace"] == target.namespace
                 and matches(p["spec"]["podSelector"], target.labels)
                 and "Ingress" in p["spec"]["policyTypes"]]
    if not selecting:
        return True  # a pod no policy selects is not isolated
    return any(port_admits(rule, port)
               and (not rule.get("from") or any(peer_admits(peer, p["metadata"]["namespace"],
                                                            source) for peer in rule["from"]))
               for p in selecting for rule in p["spec"].get("ingress") or [])


def api(own_pods: dict[str, Pod]) -> Pod:
    return own_pods["context-service-api"]


def workers(own_pods: dict[str, Pod]) -> list[Pod]:
    return [pod for name, pod in own_pods.items() if name != "context-service-api"]


def sandboxes(own_pods: dict[str, Pod]) -> list[Pod]:
    """Pool pods wherever they may run, labelled as the service labels them (and a profile
    template that copied the API's own labels)."""
    pool = pool_labels("research")
    harness = Settings().namespace  # the default CS_NAMESPACE
    assert harness == "serverless-harness"
    return [
        Pod(NS, pool),  # CS_NAMESPACE is the service's own namespace in deploy/
        Pod(NS, {**api(own_pods).labels, **pool}),
        Pod(harness, pool),
        Pod(harness, pool, GATEWAY_LABEL),  # even where the namespace was labelled by mistake
        Pod(harness, {"app": "anything"}, GATEWAY_LABEL),
        Pod("gateway", pool, GATEWAY_LABEL),  # a pool pod in the gateway's own namespace
    ]


def test_the_policies_parse_and_isolate_every_pod_of_the_service(
        policies: list[JSON], own_pods: dict[str, Pod]) -> None:
    assert sorted(p["metadata"]["name"] for p in policies) == [
        "context-service-api", "context-service-workers"]
    for policy in policies:
        assert policy["apiVersion"] == "networking.k8s.io/v1"
        assert policy["metadata"]["namespace"] == NS
        assert policy["spec"]["policyTypes"] == ["Ingress"]  # egress stays the platform's
    for name, pod in own_pods.items():
        selecting = [p["metadata"]["name"] for p in policies
                     if matches(p["spec"]["podSelector"], pod.labels)]
        expected = "context-service-api" if name == "context-service-api" \
            else "context-service-workers"
        assert selecting == [expected], name


def test_the_gateway_namespace_reaches_the_api_port_and_nothing_else(
        policies: list[JSON], own_pods: dict[str, Pod]) -> None:
    gateway = Pod("gateway", {"app": "gateway"}, GATEWAY_LABEL)
    assert reaches(policies, gateway, api(own_pods))
    assert not reaches(policies, gateway, api(own_pods), port=9090)
    assert not any(reaches(policies, gateway, worker) for worker in workers(own_pods))


def test_the_service_pods_reach_each_other(
        policies: list[JSON], own_pods: dict[str, Pod]) -> None:
    for source in own_pods.values():
        for target in own_pods.values():
            assert reaches(policies, source, target), (source.labels, target.labels)


def test_sandbox_pools_never_reach_the_api_or_the_workers(
        policies: list[JSON], own_pods: dict[str, Pod]) -> None:
    for sandbox in sandboxes(own_pods):
        for target in own_pods.values():
            assert not reaches(policies, sandbox, target), (sandbox, target.labels)


def test_other_namespaces_and_pods_are_refused(
        policies: list[JSON], own_pods: dict[str, Pod]) -> None:
    strangers = [Pod("default", {"app": "curl"}),
                 Pod("monitoring", {"app.kubernetes.io/name": "context-service",
                                    "app.kubernetes.io/component": "api"}),
                 Pod(NS, {"app": "debug"}),
                 Pod(NS, {"app.kubernetes.io/name": "context-service"})]  # no component
    for stranger in strangers:
        for target in own_pods.values():
            assert not reaches(policies, stranger, target), (stranger, target.labels)

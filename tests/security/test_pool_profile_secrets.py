"""A literal secret in a sandbox profile never reaches the event log or the history export.

A pool's profile (a SandboxTemplate of the platform) is copied into ``SandboxPoolRequested``:
a template setting ``DB_PASSWORD`` to a literal value, passing ``--token <value>`` or holding a
private key put that secret in the log, on NATS, in the history and in every export. Such a
profile is refused (400) naming the field and the fix; a profile referencing a Secret is
recorded with the reference only, as it was written.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from litestar.testing import TestClient

from context_service import bootstrap
from context_service.adapters.eventstore.export import lines
from tests.support.pool_fixtures import Seed

pytestmark = [pytest.mark.k8s, pytest.mark.postgres]
POOLS = "/v1/sandbox-pools"
WS = {"size": "1Gi", "accessMode": "ReadWriteOnce"}
PLANTED = "pw-Vt8Kq2Xz6Rb"
KEY = "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIB" + "x" * 40


def _template(*, env: list[dict[str, Any]] | None = None, args: list[str] | None = None,
              annotations: dict[str, str] | None = None) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "dev", "image": "dev:1"}
    if env is not None:
        container["env"] = env
    if args is not None:
        container["args"] = args
    return {"podTemplate": {"metadata": {"annotations": annotations or {}},
                            "spec": {"containers": [container]}}}


def _history(container: bootstrap.Container) -> bytes:
    return b"\n".join(line for line, _ in lines(container.store))


@pytest.mark.parametrize(("template", "field"), [
    (_template(env=[{"name": "DB_PASSWORD", "value": PLANTED}]),
     'spec.podTemplate.spec.containers[0].env[0].value (env "DB_PASSWORD" has a literal value); '
     "set it with valueFrom.secretKeyRef or envFrom.secretRef"),
    (_template(args=["serve", "--token", PLANTED]),
     'spec.podTemplate.spec.containers[0].args[2] (argument "--token" has a literal value); '
     "pass $(NAME) of an env var set with valueFrom.secretKeyRef, or read the secret from a "
     "secret volume"),
    (_template(annotations={"example.com/api-key": PLANTED}),
     'spec.podTemplate.metadata.annotations["example.com/api-key"] (annotation '
     '"example.com/api-key" has a literal value); keep secrets in a Secret, never in '
     "annotations"),
    (_template(env=[{"name": "SIGNER", "value": KEY}]),
     "spec.podTemplate.spec.containers[0].env[0].value (looks like a private key); keep it in a "
     "Secret and reference it (valueFrom.secretKeyRef, envFrom.secretRef or a secret volume)"),
], ids=["env", "args", "annotation", "private key"])
def test_a_profile_with_a_literal_secret_is_refused_and_nothing_recorded(
        pool_client: TestClient[Any], pool_container: bootstrap.Container, seed: Seed,
        template: dict[str, Any], field: str) -> None:
    seed.template("leaky", template)
    body = {"name": "p", "replicas": 1, "sandboxProfile": "leaky", "workspace": WS}
    answer = pool_client.post(POOLS, json=body)
    assert (answer.status_code, answer.json()) == (400, {
        "error": "invalid_request",
        "message": f'invalid sandbox pool: sandbox profile "leaky" holds a literal secret at '
                   f"{field}"})
    assert PLANTED.encode() not in answer.content and b"PRIVATE KEY" not in answer.content
    assert pool_client.get(POOLS).json() == {"items": []}
    history = _history(pool_container)
    assert PLANTED.encode() not in history and b"PRIVATE KEY" not in history


def test_a_profile_referencing_a_secret_is_recorded_as_written(
        pool_client: TestClient[Any], pool_container: bootstrap.Container, seed: Seed) -> None:
    reference = {"name": "DB_PASSWORD",
                 "valueFrom": {"secretKeyRef": {"name": "db", "key": "password"}}}
    seed.template("tidy", _template(env=[reference, {"name": "MODE", "value": "dev"}],
                                    args=["serve", "--token", "$(API_TOKEN)"]))
    body = {"name": "p", "replicas": 1, "sandboxProfile": "tidy", "workspace": WS}
    assert pool_client.post(POOLS, json=body).status_code == 201
    [recorded] = [event for event in map(json.loads, _history(pool_container).splitlines())
                  if event["name"] == "SandboxPoolRequested"]
    container = recorded["data"]["runtime"]["template_spec"]["podTemplate"]["spec"][
        "containers"][0]
    assert container["env"] == [reference, {"name": "MODE", "value": "dev"}]
    assert container["args"] == ["serve", "--token", "$(API_TOKEN)"]

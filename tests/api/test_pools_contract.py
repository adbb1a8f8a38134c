"""Pool and storage-class answers against their contract (``contract.pools``): the answers of
every strategy, observed resources included, decode strictly into the declared Structs."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from litestar.testing import TestClient

from context_service.contract.pools import Pool, PoolList, StorageClassList
from context_service.devcluster.devsim import DevSimulator
from tests.api.conftest import Api
from tests.api.test_pools_status import until_ready
from tests.support.answers import answer_of
from tests.support.pool_fixtures import Seed

pytestmark = [pytest.mark.k8s, pytest.mark.postgres]
POOLS = "/v1/sandbox-pools"


def test_the_routes_declare_their_answers(pool_client: TestClient[Any]) -> None:
    app = pool_client.app
    assert answer_of(app, "POST", POOLS) is Pool
    assert answer_of(app, "GET", POOLS) is PoolList
    assert answer_of(app, "GET", POOLS + "/any") is Pool
    assert answer_of(app, "GET", "/v1/storage-classes") is StorageClassList


def test_every_strategy_answers_its_contract(pool_client: TestClient[Any], seed: Seed,
                                             kube_sim: DevSimulator) -> None:
    api = Api(pool_client)  # checks every answer against the route's contract
    seed.template("dev")
    seed.warm_pool("w", "dev")
    seed.claim("team-data", size="2Gi")
    bodies: list[dict[str, Any]] = [
        {"name": "solo", "replicas": 1, "sandboxProfile": "dev",
         "workspace": {"size": "1Gi", "accessMode": "ReadWriteOnce"}},
        {"name": "shared", "replicas": 2,
         "workspace": {"size": "1Gi", "accessMode": "ReadWriteMany"}},
        {"name": "ext", "replicas": 1,
         "workspace": {"claimName": "team-data", "readOnly": True}},
        {"name": "agents", "replicas": 1, "warmPoolRef": "w"},
    ]
    for body in bodies:
        created = api.post(POOLS, body)
        assert created.status_code == 201, created.text
        assert "resources" not in created.json()
    for body in bodies:
        assert until_ready(pool_client, kube_sim, body["name"])["resources"]
        assert api.get(f"{POOLS}/{body['name']}").status_code == 200
    listed = api.get(POOLS).json()["items"]
    assert [p["name"] for p in listed] == ["agents", "ext", "shared", "solo"]
    assert {"sandboxProfile", "warmPoolRef", "resources"} <= {k for p in listed for k in p}
    assert {"claimName", "readOnly"} <= {k for p in listed for k in p["workspace"]}
    assert api.get("/v1/storage-classes").status_code == 200
    released = api.delete(f"{POOLS}/solo")
    assert (released.status_code, released.content) == (204, b"")


def test_a_key_the_contract_does_not_name_is_refused() -> None:
    workspace = {"size": "1Gi", "accessMode": "ReadWriteOnce"}
    pool: dict[str, Any] = {"name": "p", "status": "ready", "replicas": 1, "readyReplicas": 1,
                            "sandboxSelector": "context.rossoctl.io/pool=p",
                            "workspace": workspace}
    msgspec.json.decode(msgspec.json.encode(pool), type=Pool, strict=True)
    for extra in ({"namespace": "x"}, {"workspace": {**workspace, "mode": "x"}}):
        with pytest.raises(msgspec.ValidationError):
            msgspec.json.decode(msgspec.json.encode({**pool, **extra}), type=Pool, strict=True)

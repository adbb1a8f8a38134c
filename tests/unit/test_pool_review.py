"""Pool rules over a stand-in cluster: the leftover Pods that keep a released pool's name, and
a profile the log could not hold."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pytest

from context_service.domain.cluster import PodInfo, PoolObject, PoolObjects
from context_service.domain.errors import PoolExistsError, PoolReferenceInvalidError
from context_service.domain.pool.commands import RequestPool
from context_service.domain.pool.references import ensure_name_free, resolve
from tests.support.fake_cluster import FakeCluster

P = "context.rossoctl.io/"
MANAGED = {"app.kubernetes.io/managed-by": "context-service"}


class _Listing(FakeCluster):
    """A cluster whose pool listing holds the given objects for pool ``p``."""

    def __init__(self, objects: PoolObjects) -> None:
        super().__init__()
        self.listing = objects

    def list_pool_objects(self, namespace: str, pool: str | None = None,
                          wanted: Iterable[PoolObject] = ()) -> PoolObjects:
        return self.listing if pool == "p" else PoolObjects()


def test_leftover_pods_of_the_pool_keep_its_name() -> None:
    """Spec 1.12 step 4 and 6.9: until a released pool's objects are gone the name is taken;
    its Pods, still stopping, are among them (they carry both labels)."""
    stopping = PodInfo(namespace="ns", name="sandbox-p-0", phase="Running", ready=True,
                       deleting=True, labels={**MANAGED, P + "pool": "p"})
    with pytest.raises(PoolExistsError):
        ensure_name_free(_Listing(PoolObjects(pods=(stopping,))), "ns", "p", "existing-claim", 1)
    foreign = PodInfo(namespace="ns", name="x", phase="Running", ready=True,
                      labels={P + "pool": "p"})  # not the service's: only the pool label
    ensure_name_free(_Listing(PoolObjects(pods=(foreign,))), "ns", "p", "existing-claim", 1)


def _request(profile: str) -> RequestPool:
    return RequestPool(name="p", replicas=1, sandbox_profile=profile, size="1Gi",
                       access_mode="ReadWriteOnce")


@pytest.mark.parametrize("where", ["value", "key", "deep"])
def test_a_profile_holding_nul_anywhere_is_refused(where: str) -> None:
    """The copied template is recorded with the pool, and PostgreSQL cannot store U+0000:
    one such event held the pool view (every pool) at its position."""
    held: Any = {"value": {"env": [{"name": "A", "value": "a\x00"}]},
                 "key": {"annotations\x00": {}},
                 "deep": {"args": [[[["\x00"]]]] * 2}}[where]
    fake = FakeCluster()
    fake.add_template("ns", "odd", {"podTemplate": {"spec": {"containers": [
        {"name": "dev", "image": "dev:1", **held}]}}})
    with pytest.raises(PoolReferenceInvalidError) as refused:
        resolve(fake, "ns", _request("odd"), "dedicated", "busybox", "")
    assert refused.value.message == ('invalid sandbox pool: sandbox profile "odd" holds U+0000,'
                                     " which cannot be recorded")
    fake.add_template("ns", "fine", {"podTemplate": {"spec": {"containers": [
        {"name": "dev", "image": "dev:1", "args": ["\\u0000 written out is fine"]}]}}})
    runtime, _ = resolve(fake, "ns", _request("fine"), "dedicated", "busybox", "")
    assert runtime is not None

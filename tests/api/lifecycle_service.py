"""A service for lifecycle tests: PostgreSQL, the projections worker and a fake cluster with a
CSI storage class (``fast``) and its snapshot class (``fast-snap``)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from litestar.testing import TestClient

from context_service import bootstrap
from context_service.config import Settings
from tests.api.conftest import Api
from tests.support.fake_cluster import FakeCluster


@contextlib.contextmanager
def lifecycle_service(tmp_path: Path, database_url: str, **settings: Any
                      ) -> Iterator[tuple[Api, bootstrap.Container, FakeCluster]]:
    """The service's client (no subject yet), its container and its cluster; ``settings``
    override the defaults."""
    container = bootstrap.build(Settings(data_dir=tmp_path, sandbox_image="busybox:1.36",
                                         kube_mode="off", namespace="pools", **settings),
                                url=database_url, pool_size=4)
    fake = FakeCluster()
    fake.add_storage_class("fast", "csi.fast")
    fake.add_snapshot_class("fast-snap", "csi.fast")
    container.cluster = fake
    container.start_workers(("projections",))
    try:
        with TestClient(app=bootstrap.app(container)) as client:
            yield Api(client), container, fake
    finally:
        container.close()

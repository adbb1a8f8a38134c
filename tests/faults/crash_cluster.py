"""The cluster adapter on the test's own kube-apiserver (``plane``, tests/faults/conftest.py), for
the crash-recovery tests that kill the service around Kubernetes steps."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from context_service.adapters.kubernetes.client import close
from context_service.adapters.kubernetes.cluster import KubernetesCluster
from context_service.adapters.kubernetes.rest import Rest
from context_service.devcluster.controlplane import ControlPlane


@contextlib.contextmanager
def cluster_in(plane: ControlPlane, namespace: str) -> Iterator[KubernetesCluster]:
    """The service's own cluster adapter on ``plane``, ``namespace`` made."""
    api = plane.api_client()
    try:
        found = KubernetesCluster(Rest(api))
        found.ensure_namespace(namespace)
        yield found
    finally:
        close(api)

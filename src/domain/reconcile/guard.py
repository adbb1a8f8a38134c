"""Context name availability against the cluster (spec 1.5 create, step 4).

A PVC named ``context-<name>`` already in the namespace, managed or not, being deleted or not,
makes the name unavailable: the reconciler could neither create the claim nor safely take it.
"""

from __future__ import annotations

from context_service.domain.cluster import Cluster, context_claim_name
from context_service.domain.errors import ContextExistsError


class ClaimNameGuard:
    """``guard(namespace, name)`` raises ``ContextExistsError`` when the claim name is taken;
    a ``ClusterError`` (cluster unreachable) propagates and answers 500."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster

    def __call__(self, namespace: str, name: str) -> None:
        if self.cluster.get_claim(namespace, context_claim_name(name)) is not None:
            raise ContextExistsError()

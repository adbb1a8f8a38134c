"""Request validation of a pool create (spec 2.3 steps 1 to 8, bare messages, first wins), plus
the storage class of a managed workspace, which must be a name the API server accepts, and, once
the profile is resolved (``decide`` sees it), a blueprint free of literal secrets (0060)."""

from __future__ import annotations

from context_service.domain.cluster import ProfileRuntime
from context_service.domain.errors import PoolInvalidError, PoolReferenceInvalidError
from context_service.domain.pool.commands import RequestPool
from context_service.domain.pool.secrets import literal_secret
from context_service.domain.values import (
    is_context_name,
    is_dns_subdomain,
    is_positive_quantity,
    quote,
)

NAME_MESSAGE = "name must be a lowercase Kubernetes name no longer than 50 characters"


def strategy_of(request: RequestPool) -> str:
    if request.warm_pool_ref:
        return "warm-pool"
    if request.claim_name:
        return "existing-claim"
    return "shared" if request.access_mode == "ReadWriteMany" else "dedicated"


def validate_pool(r: RequestPool) -> str:
    """Raise ``PoolInvalidError`` for the first failed rule, then, with a resolved profile,
    ``PoolReferenceInvalidError`` for a literal secret in it; return the strategy."""
    strategy = _validate_request(r)
    ensure_no_literal_secrets(r)
    return strategy


def ensure_no_literal_secrets(r: RequestPool) -> None:
    """A resolved profile is recorded with the pool: ``SandboxPoolRequested`` goes to the log,
    NATS and every export, which no secret may reach. Checked here, where ``decide`` checks the
    request it records, so no way of requesting a pool skips it."""
    if isinstance(r.runtime, ProfileRuntime):
        found = literal_secret(r.runtime.template_spec)
        if found is not None:
            raise PoolReferenceInvalidError(f"sandbox profile {quote(r.runtime.profile)} {found}")


def _validate_request(r: RequestPool) -> str:
    if not is_context_name(r.name):
        raise PoolInvalidError(NAME_MESSAGE)
    if r.replicas is None or not 1 <= r.replicas <= 100:
        raise PoolInvalidError("replicas must be between 1 and 100")
    if r.sandbox_profile:
        if not is_dns_subdomain(r.sandbox_profile):
            raise PoolInvalidError("sandboxProfile must be a lowercase Kubernetes name")
        if r.warm_pool_ref:
            raise PoolInvalidError("sandboxProfile cannot be combined with warmPoolRef; "
                                   "the warm pool already selects a template")
    if r.warm_pool_ref:
        if not is_dns_subdomain(r.warm_pool_ref):
            raise PoolInvalidError("warmPoolRef must be a lowercase Kubernetes name")
        if (r.size or r.access_mode or r.storage_class or r.claim_name
                or r.read_only is not None):
            raise PoolInvalidError("warmPoolRef cannot be combined with workspace settings")
        return "warm-pool"
    if r.claim_name:
        if not is_dns_subdomain(r.claim_name):
            raise PoolInvalidError("workspace.claimName must be a lowercase Kubernetes name")
        if r.size or r.access_mode or r.storage_class:
            raise PoolInvalidError(
                "workspace.claimName cannot be combined with size, accessMode, or storageClass")
        if r.read_only is None:
            raise PoolInvalidError("workspace.readOnly is required with workspace.claimName")
        return "existing-claim"
    if r.read_only is not None:
        raise PoolInvalidError("workspace.readOnly requires workspace.claimName")
    if not r.size.strip():
        raise PoolInvalidError("workspace.size is required")
    if not is_positive_quantity(r.size):
        raise PoolInvalidError("workspace.size must be a positive Kubernetes quantity")
    if r.access_mode not in ("ReadWriteMany", "ReadWriteOnce"):
        raise PoolInvalidError("workspace.accessMode must be ReadWriteMany or ReadWriteOnce")
    if r.storage_class and not is_dns_subdomain(r.storage_class):
        # the API server refuses such a storageClassName: the pool could never be provisioned
        raise PoolInvalidError("workspace.storageClass must be a lowercase Kubernetes name")
    return strategy_of(r)

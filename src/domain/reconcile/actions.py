"""The steps a plan is made of, and how each one is carried out through the cluster port.

Every action is safe to repeat: creates are create-if-absent, restores put back the fields the
service sets (a server-side apply), deletes ignore not-found. Actions run in stages: stage 0
before stage 1 (workspace PVCs before the Sandboxes that mount them; Sandboxes and SandboxClaims
deleted before the PVCs of a released pool). Only the pool whose stage-0 action failed waits;
every other item of the pass goes on (``owner``).
"""

from __future__ import annotations

import msgspec

from context_service.domain.cluster import (
    Cluster,
    ContextClaim,
    PoolSandbox,
    PoolSandboxClaim,
    WorkspaceClaim,
    sandbox_claim_name,
    sandbox_name,
    workspace_claim_name,
)


class CreateWorkspaceClaim(msgspec.Struct, frozen=True, tag=True):
    claim: WorkspaceClaim
    stage: int = 0


class CreateSandbox(msgspec.Struct, frozen=True, tag=True):
    sandbox: PoolSandbox
    stage: int = 1


class CreateSandboxClaim(msgspec.Struct, frozen=True, tag=True):
    claim: PoolSandboxClaim
    stage: int = 1


class EnsureContextClaim(msgspec.Struct, frozen=True, tag=True):
    """Create the context PVC, or bring its labels and kept-current annotations up to date."""

    claim: ContextClaim
    stage: int = 0


class RestoreWorkspaceClaim(msgspec.Struct, frozen=True, tag=True):
    """Put back the labels of a pool's PVC (its spec cannot change once created)."""

    claim: WorkspaceClaim
    stage: int = 0


class RestoreSandbox(msgspec.Struct, frozen=True, tag=True):
    """Put back the labels, annotations and spec fields the service set on a Sandbox."""

    sandbox: PoolSandbox
    stage: int = 1


class RestoreSandboxClaim(msgspec.Struct, frozen=True, tag=True):
    claim: PoolSandboxClaim
    stage: int = 1


class DeleteSandbox(msgspec.Struct, frozen=True, tag=True):
    namespace: str
    name: str
    stage: int = 0
    pool: str = ""


class DeleteSandboxClaim(msgspec.Struct, frozen=True, tag=True):
    """Deleted with foreground propagation (spec 6.9)."""

    namespace: str
    name: str
    stage: int = 0
    pool: str = ""


class DeleteClaim(msgspec.Struct, frozen=True, tag=True):
    namespace: str
    name: str
    stage: int = 1
    pool: str = ""  # "" for a context's claim


Action = (
    CreateWorkspaceClaim
    | CreateSandbox
    | CreateSandboxClaim
    | EnsureContextClaim
    | RestoreWorkspaceClaim
    | RestoreSandbox
    | RestoreSandboxClaim
    | DeleteSandbox
    | DeleteSandboxClaim
    | DeleteClaim
)
STAGES = (0, 1)
RESTORES = (RestoreWorkspaceClaim, RestoreSandbox, RestoreSandboxClaim)


def owner(action: Action) -> str:
    """The pool whose later stage waits for this action ("" when nothing waits for it): a
    pool's Sandboxes need its PVCs, its PVCs go after its Sandboxes. Other items never wait."""
    match action:
        case CreateWorkspaceClaim() | CreateSandboxClaim():
            return action.claim.pool
        case CreateSandbox():
            return action.sandbox.pool
        case (EnsureContextClaim() | RestoreWorkspaceClaim() | RestoreSandbox()
              | RestoreSandboxClaim()):
            return ""  # a restored object exists: what mounts it need not wait
        case DeleteSandbox() | DeleteSandboxClaim() | DeleteClaim():
            return action.pool


def apply(cluster: Cluster, action: Action) -> bool:
    """Carry out one action; answers whether the cluster changed (False: already so)."""
    match action:
        case CreateWorkspaceClaim():
            return cluster.ensure_workspace_claim(action.claim)
        case CreateSandbox():
            return cluster.ensure_sandbox(action.sandbox)
        case CreateSandboxClaim():
            return cluster.ensure_sandbox_claim(action.claim)
        case EnsureContextClaim():
            return cluster.ensure_context_claim(action.claim)
        case RestoreWorkspaceClaim():
            return cluster.restore_workspace_claim(action.claim)
        case RestoreSandbox():
            return cluster.restore_sandbox(action.sandbox)
        case RestoreSandboxClaim():
            return cluster.restore_sandbox_claim(action.claim)
        case DeleteSandbox():
            return cluster.delete_sandbox(action.namespace, action.name)
        case DeleteSandboxClaim():
            return cluster.delete_sandbox_claim(action.namespace, action.name)
        case DeleteClaim():
            return cluster.delete_claim(action.namespace, action.name)


def describe(action: Action) -> str:
    """A short log line: ``create sandbox team/sandbox-docs-0``."""
    match action:
        case CreateWorkspaceClaim():
            c = action.claim
            return f"create pvc {c.namespace}/{c.pool}-workspace" + (
                "" if c.index is None else f"-{c.index}")
        case CreateSandbox():
            s = action.sandbox
            return f"create sandbox {s.namespace}/sandbox-{s.pool}-{s.index}"
        case CreateSandboxClaim():
            c2 = action.claim
            return f"create sandboxclaim {c2.namespace}/claim-{c2.pool}-{c2.index}"
        case EnsureContextClaim():
            return f"ensure pvc {action.claim.namespace}/context-{action.claim.context}"
        case RestoreWorkspaceClaim():
            c3 = action.claim
            return f"restore pvc {c3.namespace}/{workspace_claim_name(c3.pool, c3.index)}"
        case RestoreSandbox():
            s2 = action.sandbox
            return f"restore sandbox {s2.namespace}/{sandbox_name(s2.pool, s2.index)}"
        case RestoreSandboxClaim():
            c4 = action.claim
            return f"restore sandboxclaim {c4.namespace}/{sandbox_claim_name(c4.pool, c4.index)}"
        case DeleteSandbox():
            return f"delete sandbox {action.namespace}/{action.name}"
        case DeleteSandboxClaim():
            return f"delete sandboxclaim {action.namespace}/{action.name}"
        case DeleteClaim():
            return f"delete pvc {action.namespace}/{action.name}"

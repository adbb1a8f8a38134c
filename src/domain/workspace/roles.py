"""Roles and the permissions they hold (agent-context-api.md §3.2)."""

from __future__ import annotations

from context_service.domain.events import ADMIN, Subject

ROLES = ("owner", "admin", "member", "viewer")
_MANAGERS = frozenset({"owner", "admin"})
_RUNNERS = frozenset({"owner", "admin", "member"})
PERMISSIONS: dict[str, frozenset[str]] = {
    "members:manage": _MANAGERS,
    "agent_credential:manage": _MANAGERS,
    "context_set:manage": _MANAGERS,
    "query_template:manage": _MANAGERS,
    "context:read": frozenset(ROLES),
    "queries:run": _RUNNERS,
}
# Credential scopes in canonical order; each is also the permission of the same name.
SCOPES = ("context:read", "queries:run")


def role_permits(role: str | None, permission: str) -> bool:
    """Whether ``role`` (None: no role) holds ``permission``."""
    return role is not None and role in PERMISSIONS.get(permission, frozenset())


def subject_permits(subject: Subject, role: str | None, permission: str) -> bool:
    """The bootstrap administrator acts as owner of every namespace."""
    return subject == ADMIN or role_permits(role, permission)


def acts_as_owner(subject: Subject, role: str | None) -> bool:
    return subject == ADMIN or role == "owner"

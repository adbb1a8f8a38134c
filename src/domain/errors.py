"""The one base of every domain error; ``http/errors.py`` maps each subclass to a response."""

from __future__ import annotations


class DomainError(Exception):
    """A command was refused. ``message`` is the exact client-facing text."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class RequestInvalidError(DomainError):
    """Request-level validation failed (bare message, 400)."""


class EventTooLargeError(RequestInvalidError):
    """The request would record an event too large to publish (400, bare message)."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"request would record an event larger than {limit} bytes")
        self.limit = limit


class ContextInvalidError(DomainError):
    """Domain-level check failed (400, ``invalid context resource: `` prefix)."""

    def __init__(self, detail: str) -> None:
        super().__init__(f"invalid context resource: {detail}")
        self.detail = detail


class ContextNotFoundError(DomainError):
    """Absent, deleted or not authorized: indistinguishable on purpose (404)."""

    def __init__(self) -> None:
        super().__init__("context resource not found")


class ContextExistsError(DomainError):
    """The name is in use (409)."""

    def __init__(self) -> None:
        super().__init__("context resource already exists")


class ContextInUseError(DomainError):
    """Consumers block a non-forced delete (409)."""

    def __init__(self, detail: str) -> None:
        super().__init__(f"context resource is in use: {detail}")


class LifecycleUnsupportedError(DomainError):
    """The storage backend cannot do this (501)."""

    def __init__(self, detail: str) -> None:
        super().__init__(
            f"context lifecycle operation is not supported by this storage backend: {detail}"
        )


class PoolInvalidError(DomainError):
    """A pool request failed validation (bare message, 400)."""


class PoolReferenceInvalidError(DomainError):
    """A pool reference failed against the cluster (400, ``invalid sandbox pool: `` prefix)."""

    def __init__(self, detail: str) -> None:
        super().__init__(f"invalid sandbox pool: {detail}")


class PoolNotFoundError(DomainError):
    def __init__(self) -> None:
        super().__init__("sandbox pool not found")


class PoolExistsError(DomainError):
    def __init__(self) -> None:
        super().__init__("sandbox pool already exists")


class ConcurrencyError(DomainError):
    """Another writer got there first; safe commands are retried, creates answer 409."""

    def __init__(self) -> None:
        super().__init__("concurrent update")


# --- workspaces and agent credentials (agent-context-api.md §3, §4) ----------------------------


class WorkspaceNotFoundError(DomainError):
    """Not a member, or a member lacking the route's permission: hidden equals absent (404)."""

    def __init__(self) -> None:
        super().__init__("workspace not found")


class MemberNotFoundError(DomainError):
    def __init__(self) -> None:
        super().__init__("workspace member not found")


class MembershipInvalidError(DomainError):
    """A membership rule refused the change (400, ``invalid workspace membership: `` prefix)."""

    def __init__(self, detail: str) -> None:
        super().__init__(f"invalid workspace membership: {detail}")


class MembershipConflictError(DomainError):
    """The change would break an invariant of the workspace (409 ``conflict``)."""

    def __init__(self, detail: str) -> None:
        super().__init__(f"workspace membership conflict: {detail}")


class PermissionRequiredError(DomainError):
    """A member whose role lacks the permission of an ``/api/w`` route (403)."""

    def __init__(self, permission: str) -> None:
        super().__init__(f'permission "{permission}" is required')
        self.permission = permission


class ScopeNotHeldError(DomainError):
    """A credential may only carry scopes its creator's role holds (403)."""

    def __init__(self, scope: str) -> None:
        super().__init__(f'scope "{scope}" is not held by your role')


class CredentialNotFoundError(DomainError):
    def __init__(self) -> None:
        super().__init__("agent credential not found")


class CredentialLimitError(DomainError):
    """The workspace already has the maximum of active credentials (409)."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"workspace already has {limit} active agent credentials")
        self.limit = limit


class CredentialIdTakenError(DomainError):
    """A drawn credential id is already recorded; the caller draws another."""

    def __init__(self) -> None:
        super().__init__("agent credential id is taken")


# --- context sets (agent-context-api.md §6) ----------------------------------------------------


class ContextSetInvalidError(DomainError):
    """A context-set version failed request validation (bare message, 400)."""


class ContextSetReferenceInvalidError(DomainError):
    """A context set names something the namespace lacks (400, ``invalid context set: ``)."""

    def __init__(self, detail: str) -> None:
        super().__init__(f"invalid context set: {detail}")
        self.detail = detail


class ContextSetNotFoundError(DomainError):
    def __init__(self) -> None:
        super().__init__("context set not found")


class ContextSetExistsError(DomainError):
    """The id is taken by a set of the namespace, archived ones included (409)."""

    def __init__(self) -> None:
        super().__init__("context set already exists")


class ContextSetArchivedError(DomainError):
    """An archived set cannot change any more (409 ``conflict``)."""

    def __init__(self) -> None:
        super().__init__("context set conflict: context set is archived")


# --- query templates (agent-context-api.md §11) ------------------------------------------------


class QueryTemplateInvalidError(DomainError):
    """A template failed request validation (bare message, 400)."""


class QueryTemplateRefusedError(DomainError):
    """A domain check refused the template (400, ``invalid query template: `` prefix)."""

    def __init__(self, detail: str) -> None:
        super().__init__(f"invalid query template: {detail}")
        self.detail = detail


class QueryTemplateNotFoundError(DomainError):
    def __init__(self) -> None:
        super().__init__("query template not found")


class QueryTemplateExistsError(DomainError):
    """The id is taken by a template of the namespace, retired ones included (409)."""

    def __init__(self) -> None:
        super().__init__("query template already exists")


class QueryTemplateRetiredError(DomainError):
    """A retired template cannot change any more (409 ``conflict``)."""

    def __init__(self) -> None:
        super().__init__("query template conflict: query template is retired")


class SandboxNotConfiguredError(DomainError):
    """The execution sandbox failed a start-up check (500)."""

    def __init__(self, point: str) -> None:
        super().__init__(f"query template sandbox is not configured: {point}")

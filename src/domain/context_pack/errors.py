"""Refusals of the replay routes (spec §8); the agent routes answer them in the ``/api/``
body (404 ``NOT_FOUND``, 410 ``AGENT_REPLAY_EXPIRED``)."""

from __future__ import annotations

from context_service.domain.errors import DomainError


class ReplayNotFoundError(DomainError):
    """Unknown, or recorded in another workspace: indistinguishable on purpose."""

    def __init__(self) -> None:
        super().__init__("replay not found")


class ReplayExpiredError(DomainError):
    def __init__(self, replay_id: str, expires_at: str) -> None:
        super().__init__(f"replay {replay_id} expired at {expires_at}")

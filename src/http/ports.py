"""What the HTTP layer needs from the rest of the service, as ports; bootstrap supplies them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from src.domain.context.commands import Command
from src.domain.context.state import ContextState
from src.domain.events import Subject
from src.projections.reads import Consistency, ContextReads


class CommandOutcome(Protocol):
    @property
    def state(self) -> ContextState: ...

    @property
    def position(self) -> int: ...


class ContextCommands(Protocol):
    def authorize(self, namespace: str, name: str, actor: Subject,
                  permission: str) -> ContextState: ...

    def execute(self, namespace: str, name: str, command: Command) -> CommandOutcome: ...


@dataclass
class Services:
    contexts: ContextCommands
    reads: ContextReads
    consistency: Consistency
    require_subject: bool = False
    read_wait_seconds: float = 5.0
    extra: dict[str, Any] = field(default_factory=dict)

"""What the settings pages need from the rest of the service; bootstrap supplies it in
``Services.settings_ui``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from litestar import Request

from context_service.domain.events import Subject
from context_service.http.common import services


class WorkspaceList(Protocol):
    def of(self, subject: Subject) -> list[tuple[str, str]]:
        """``(namespace, role)`` of every workspace where ``subject`` holds a role."""


@dataclass(frozen=True)
class SettingsUi:
    workspaces: WorkspaceList | None = None
    dev_subject: bool = False  # CS_SETTINGS_DEV_SUBJECT: the page lets the person type a subject


def settings_ui(request: Request[Any, Any, Any]) -> SettingsUi:
    found = services(request).settings_ui
    return SettingsUi() if found is None else found

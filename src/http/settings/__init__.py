"""Settings → Agent access: the web pages where workspace owners and admins manage agent
credentials, members and (read-only) context sets, plus the workspace-picker read."""

from context_service.http.settings.guard import ConsoleHeaders, SettingsGuard
from context_service.http.settings.pages import routers, template_config
from context_service.http.settings.ports import SettingsUi, WorkspaceList
from context_service.http.settings.workspaces import ROUTES as API_ROUTES

__all__ = ["API_ROUTES", "ConsoleHeaders", "SettingsGuard", "SettingsUi", "WorkspaceList",
           "routers", "template_config"]

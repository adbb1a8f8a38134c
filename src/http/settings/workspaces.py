"""``GET /v1/workspaces``: who the caller is and the workspaces where it holds a role, for the
settings pages' workspace picker (a ``/v1`` read: ``{"error","message"}`` bodies,
read-your-writes on ``workspace_members``)."""

from __future__ import annotations

from typing import Any

from litestar import Request, Response, get

from context_service.contract.workspaces import WorkspaceList
from context_service.http.common import caller, json, threaded, wait_for_views
from context_service.http.errors import HttpError
from context_service.http.render import subject as render_subject
from context_service.http.settings.ports import settings_ui

VIEWS = ("workspace_members",)


@get("/v1/workspaces")
@threaded
def list_workspaces(request: Request[Any, Any, Any]) -> Response[WorkspaceList]:
    """The caller and its workspaces, sorted by namespace.

    The bootstrap administrator is given every workspace with members, as owner."""
    actor = caller(request)
    found = settings_ui(request).workspaces
    if found is None:
        raise HttpError(500, "internal_error", "the workspace list is not configured")
    wait_for_views(request, VIEWS)
    return json({"subject": render_subject(actor),
                 "items": [{"namespace": ns, "role": role} for ns, role in found.of(actor)]})


ROUTES = [list_workspaces]

"""The settings pages under ``/settings``: Jinja2 shells (layout, navigation, the CSRF token,
the development-mode bar) whose scripts read and change everything through the management
routes (``/v1/...``, ``/api/w/...``); the static assets ship inside the package."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import quote

from jinja2 import Environment, PackageLoader, select_autoescape
from litestar import Request, Response, Router, get, route
from litestar.datastructures import CacheControlHeader, Cookie
from litestar.enums import HttpMethod
from litestar.exceptions import NotFoundException
from litestar.plugins.jinja import JinjaTemplateEngine
from litestar.response import Redirect, Template
from litestar.static_files import create_static_files_router
from litestar.template import TemplateConfig

from context_service.http.errors import error_response
from context_service.http.settings import csrf
from context_service.http.settings.guard import csrf_key, page_token
from context_service.http.settings.ports import settings_ui

STATIC_DIR = Path(__file__).parent / "static"
_W = "/w/{workspace:str}"
# every path the pages router answers, the catch-all last
PATHS = ["/", _W, _W + "/agent-access", _W + "/members", _W + "/context-sets",
         _W + "/context-sets/{set_id:str}", "/{rest:path}", "/static"]
# a page is only ever read: its scripts change things through the management API. Answered
# here rather than by routing, so that the refusal is the pages' own (headers, look); OPTIONS
# is Litestar's, answered on every path
REFUSED = [m for m in HttpMethod if m not in (HttpMethod.GET, HttpMethod.OPTIONS)]
# status: the JSON body's code and message, the page's heading and sentence
ERRORS = {
    404: ("not_found", "route not found", "Page not found",
          "There is no settings page at this address."),
    405: ("method_not_allowed", "method not allowed", "Method not allowed",
          "Settings pages are only read: the changes you make on them go through the "
          "service's management API."),
}


def template_config() -> TemplateConfig[JinjaTemplateEngine]:
    env = Environment(loader=PackageLoader("context_service.http.settings", "templates"),
                      autoescape=select_autoescape(default=True), trim_blocks=True,
                      lstrip_blocks=True)
    return TemplateConfig(instance=JinjaTemplateEngine.from_environment(env))


def _page(request: Request[Any, Any, Any], template: str, title: str, script: str,
          status: int = 200, **context: Any) -> Template:
    """A page with this browser's CSRF token (kept while it is valid, else a new one).

    The cookie is set even when the browser holds it: the token may have come in a cookie that
    a sibling host tossed for the pages' paths alone, which writes to the management API would
    not carry; set as the page's own (this host, ``Path=/``), every write carries it.

    ``SameSite=Lax``, not ``Strict``: a page opened from a link on another site must receive
    the browser's cookie and keep it, or it would set a new one and every settings tab already
    open would have its writes refused. Lax adds no way in: the cookie is only ever checked on
    writes, which must also carry the token in a header no other site can set."""
    key = csrf_key(request.app)
    token = page_token(key, request.scope["headers"]) or csrf.issue(key)
    cookie = Cookie(key=csrf.COOKIE, value=token, path="/", httponly=True, samesite="lax",
                    secure=_over_tls(request))
    workspace = request.path_params.get("workspace")
    return Template(template_name=template, status_code=status, cookies=[cookie], context={
        "title": title, "script": script, "workspace": workspace, "csrf_token": token,
        "dev_subject": settings_ui(request).dev_subject, **context})


def _over_tls(request: Request[Any, Any, Any]) -> bool:
    """The browser reached the service over https: directly, or through the gateway that ended
    TLS and says so (the first hop of ``X-Forwarded-Proto`` or ``Forwarded``). Believing a
    client that claims https costs only that client its own cookie."""
    if request.url.scheme == "https":
        return True
    forwarded = request.headers.get("x-forwarded-proto", "").split(",")[0]
    if forwarded.strip().lower() == "https":
        return True
    first = request.headers.get("forwarded", "").split(",")[0]
    pairs = (part.strip().partition("=") for part in first.split(";"))
    return any(k.lower() == "proto" and v.strip('"').lower() == "https" for k, _, v in pairs)


@get("/", sync_to_thread=False, include_in_schema=False)
def workspaces_page(request: Request[Any, Any, Any]) -> Template:
    return _page(request, "workspaces.html", "Workspaces", "workspaces")


@get(_W, sync_to_thread=False, include_in_schema=False)
def workspace_home(request: Request[Any, Any, Any]) -> Redirect:
    workspace = request.path_params["workspace"]
    return Redirect(path=f"/settings/w/{quote(workspace, safe='')}/agent-access")


@get(_W + "/agent-access", sync_to_thread=False, include_in_schema=False)
def agent_access_page(request: Request[Any, Any, Any]) -> Template:
    return _page(request, "agent_access.html", "Agent access", "agent-access",
                 nav="agent-access")


@get(_W + "/members", sync_to_thread=False, include_in_schema=False)
def members_page(request: Request[Any, Any, Any]) -> Template:
    return _page(request, "members.html", "Members", "members", nav="members")


@get(_W + "/context-sets", sync_to_thread=False, include_in_schema=False)
def context_sets_page(request: Request[Any, Any, Any]) -> Template:
    return _page(request, "context_sets.html", "Context sets", "context-sets",
                 nav="context-sets")


@get(_W + "/context-sets/{set_id:str}", sync_to_thread=False, include_in_schema=False)
def context_set_page(request: Request[Any, Any, Any]) -> Template:
    set_id = request.path_params["set_id"]
    return _page(request, "context_set.html", set_id, "context-set", nav="context-sets",
                 set_id=set_id)


# the asset folder itself: the static router answers only the files inside it
@get(["/{rest:path}", "/static"], sync_to_thread=False, include_in_schema=False)
def unknown_page(request: Request[Any, Any, Any]) -> Response[Any]:
    return _error_page(request, 404)


@route(PATHS, http_method=REFUSED, sync_to_thread=False, include_in_schema=False)
def refused_page_method(request: Request[Any, Any, Any]) -> Response[Any]:
    return _error_page(request, 405, {"Allow": "GET"})


@route("/{file_path:path}", http_method=[m for m in REFUSED if m != HttpMethod.HEAD],
       sync_to_thread=False, include_in_schema=False)
def refused_asset_method(request: Request[Any, Any, Any]) -> Response[Any]:
    return _error_page(request, 405, {"Allow": "GET, HEAD"})


def _missing_asset(request: Request[Any, Any, Any], _: Exception) -> Response[Any]:
    return _error_page(request, 404)


def _error_page(request: Request[Any, Any, Any], status: int,
               headers: dict[str, str] | None = None) -> Response[Any]:
    """An error in the pages' look: the error page for a client that takes HTML, the ``/v1``
    body for one that asks for JSON only, no body for HEAD. Never stored: the page holds
    this browser's CSRF token, and an asset's error is no asset."""
    code, message, title, sentence = ERRORS[status]
    headers = {**(headers or {}), "Cache-Control": "no-store"}
    if request.method == HttpMethod.HEAD:
        return Response(None, status_code=status, headers=headers)
    if request.accept.best_match(["text/html", "application/json"],
                                 default="text/html") == "application/json":
        return error_response(status, code, message, headers)
    page = _page(request, "error.html", title, "page", status=status, code=status,
                 sentence=sentence)
    page.headers.update(headers)
    return page


async def _exact_paths(request: Request[Any, Any, Any]) -> Response[Any] | None:
    """``/settings/...`` with a trailing slash or an empty segment (the router collapses
    ``//``, so a path of another shape reached the page) is sent to the path without them.
    The location starts with one ``/``: a path the router matched despite more leading slashes
    (``//settings/``) must not become a protocol-relative address (the host ``settings``)."""
    raw = (request.scope.get("raw_path") or b"").split(b"?", 1)[0].decode("latin-1")
    canonical = "/" + "/".join(part for part in raw.lstrip("/\\").split("/") if part)
    if len(raw) > 1 and raw != canonical:
        query = f"?{request.url.query}" if request.url.query else ""
        return Redirect(path=canonical + query, status_code=308)
    return None


def routers() -> list[Router]:
    pages = Router(path="/settings", before_request=_exact_paths, include_in_schema=False,
                   route_handlers=[workspaces_page, workspace_home, agent_access_page,
                                   members_page, context_sets_page, context_set_page,
                                   unknown_page, refused_page_method])
    static = create_static_files_router(
        path="/settings/static", directories=[STATIC_DIR], name="settings-static",
        cache_control=CacheControlHeader(no_cache=True), before_request=_exact_paths,
        exception_handlers={NotFoundException: _missing_asset})
    static.register(refused_asset_method)
    return [pages, static]

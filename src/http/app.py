"""The Litestar application factory: routes, JSON errors for every failure, OpenAPI."""

from __future__ import annotations

import asyncio
import logging
import uuid
from typing import Any

from litestar import Litestar, Request, Response, get
from litestar.exceptions import (
    HTTPException,
    MethodNotAllowedException,
    NotFoundException,
)

from context_service.contract.service import Health, Readiness
from context_service.domain.errors import DomainError
from context_service.http import hosts, limits, metrics, openapi, segments, settings
from context_service.http.agent import (
    credentials,
    fields,
    library,
    packs,
    replays,
    template_run,
)
from context_service.http.agent import errors as api
from context_service.http.common import in_thread, services
from context_service.http.errors import HttpError, domain_error_response, error_response
from context_service.http.mcp.endpoint import McpEndpoint
from context_service.http.ports import Services
from context_service.http.refusals import refusals
from context_service.http.routes import (
    access,
    context_sets,
    contexts,
    history,
    lifecycle,
    members,
    pools,
    query,
    query_templates,
    timeline,
)
from context_service.stop_signals import RequestAbandoned

log = logging.getLogger(__name__)
# /readyz answers within this even when the check hangs (a database that accepted the
# connection and stopped answering): a probe that never answers helps nobody
READY_TIMEOUT = 5.0
_METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE")


@get("/healthz", sync_to_thread=False)
def healthz() -> Response[Health]:
    """Liveness: the process serves HTTP (nothing else is checked)."""
    ok: Response[Any] = Response(b'{"status":"ok"}', media_type="application/json")
    return ok


@get("/readyz", responses=refusals({503: "not ready: the database is unreachable or its "
                                           "schema does not match this version"}))
async def readyz(request: Request[Any, Any, Any]) -> Response[Readiness]:
    """Readiness: the database answers and its schema version is this code's."""
    check = services(request).readiness
    try:
        problem = (None if check is None
                   else await asyncio.wait_for(in_thread(check), READY_TIMEOUT))
    except TimeoutError:
        problem = f"the readiness check did not answer within {READY_TIMEOUT:g}s"
    if problem is not None:
        return error_response(503, "unavailable", f"not ready: {problem}")
    ready: Response[Any] = Response(b'{"status":"ready"}', media_type="application/json")
    return ready


def _on_domain(request: Request[Any, Any, Any], exc: Exception) -> Response[bytes]:
    assert isinstance(exc, DomainError)
    if api.is_api(request):
        return api.domain_response(exc)
    return domain_error_response(exc)


def _on_http(request: Request[Any, Any, Any], exc: Exception) -> Response[bytes]:
    assert isinstance(exc, HttpError)
    if api.is_api(request):
        if exc.status == 503:
            return api.api_error(api.unavailable())
        return api.api_response(exc.status, exc.code.upper(), exc.message, None, exc.headers)
    return error_response(exc.status, exc.code, exc.message, exc.headers)


def _on_api(_: Request[Any, Any, Any], exc: Exception) -> Response[bytes]:
    assert isinstance(exc, api.ApiError)
    return api.api_error(exc)


def _error(request: Request[Any, Any, Any], status: int, code: str, message: str,
           headers: dict[str, str] | None = None) -> Response[bytes]:
    """An error in the body style of the request's route family."""
    if api.is_api(request):
        return api.api_response(status, code.upper(), message, None, headers)
    return error_response(status, code, message, headers)


def _on_litestar(request: Request[Any, Any, Any], exc: Exception) -> Response[bytes]:
    if isinstance(exc, NotFoundException) or (
            isinstance(exc, MethodNotAllowedException) and _trailing_slash(request)):
        return _error(request, 404, "not_found", "route not found")
    if isinstance(exc, MethodNotAllowedException):
        return _error(request, 405, "method_not_allowed", "method not allowed",
                      _allow(exc.headers or {}))
    assert isinstance(exc, HTTPException)
    if exc.status_code == 413:  # beyond the transport limit, long past the 1 MiB body rule
        return _error(request, 400, "invalid_request", "request body too large")
    if exc.status_code == 400:
        return _error(request, 400, "invalid_request", str(exc.detail))
    return _error(request, exc.status_code, "internal_error", str(exc.detail))


def _allow(headers: dict[str, str]) -> dict[str, str] | None:
    """The API's methods of the path in a stable order; Litestar's implicit OPTIONS is not one."""
    listed = headers.get("Allow") or headers.get("allow") or ""
    methods = {m.strip() for m in listed.split(",")} - {"", "OPTIONS"}
    ordered = sorted(methods, key=lambda m: (_METHODS.index(m) if m in _METHODS else 99, m))
    return {"Allow": ", ".join(ordered)} if ordered else None


def _on_any(request: Request[Any, Any, Any], exc: Exception) -> Response[bytes]:
    """A failure nobody foresaw: the answer names a request id the log line also carries, never
    the exception (its text can hold SQL, paths or values of other callers)."""
    if isinstance(exc, RequestAbandoned):  # the drain answered it 503 already; nothing written
        log.info("abandoned request's write refused", extra={"path": request.url.path})
        return _error(request, 503, "unavailable", str(exc))
    request_id = uuid.uuid4().hex
    log.exception("request failed", extra={"path": request.url.path, "request_id": request_id})
    return _error(request, 500, "internal_error", f"internal error (request id {request_id})",
                  {"X-Request-Id": request_id})


def _raw_path(request: Request[Any, Any, Any]) -> bytes:
    raw = request.scope.get("raw_path") or request.scope.get("path", "").encode()
    return bytes(raw.split(b"?", 1)[0])


def _trailing_slash(request: Request[Any, Any, Any]) -> bool:
    path = _raw_path(request)
    return len(path) > 1 and path.endswith(b"/")


def _empty_segment(request: Request[Any, Any, Any]) -> bool:
    """``//`` in the path: Litestar collapses it, so a path of another shape reached a route
    (spec §1.2 of the agent API: paths match exactly)."""
    return b"//" in _raw_path(request)


async def _exact_paths(request: Request[Any, Any, Any]) -> Response[bytes] | None:
    """A trailing slash names a different, unknown path (Litestar would otherwise strip it);
    OPTIONS is not a method of the API (Litestar would answer it itself). Async, so Litestar
    does not hand every request to a worker thread just to run this check."""
    if _trailing_slash(request) or _empty_segment(request):
        return _error(request, 404, "not_found", "route not found")
    if request.method == "OPTIONS":
        methods: set[str] = set()
        for path in request.scope["route_handler"].paths:
            methods.update(request.app.route_handler_method_map.get(path, {}))
        return _error(request, 405, "method_not_allowed", "method not allowed",
                      _allow({"Allow": ", ".join(methods)}))
    return None


def create_app(services: Services, extra_routes: list[Any] | None = None,
               allowed_hosts: frozenset[str] = frozenset({hosts.ANY})) -> Litestar:
    """The application; ``allowed_hosts`` as ``Settings.allowed_host_names`` (any by default)."""
    routes = [healthz, readyz, *contexts.ROUTES, *access.ROUTES, *history.ROUTES,
              *query.ROUTES, *timeline.ROUTES, *pools.ROUTES, *lifecycle.ROUTES, *members.ROUTES,
              *credentials.ROUTES, *context_sets.ROUTES, *library.ROUTES,
              *query_templates.ROUTES, *template_run.ROUTES,
              *packs.ROUTES, *replays.ROUTES, *fields.ROUTES,
              *settings.API_ROUTES, *(extra_routes or [])]
    table = tuple(routes)

    @get("/schema/openapi.json", include_in_schema=False)
    async def openapi_document() -> Response[bytes]:
        # made on first ask, once per route table in the process (Litestar generates it)
        return Response(await in_thread(openapi.document_bytes, table),
                        media_type="application/json")

    requests = metrics.RequestMetrics()
    gauges = services.gauges
    mcp = McpEndpoint()  # the agent API's tools over MCP, beside the routes they call
    app = Litestar(
        route_handlers=[*routes, openapi_document, metrics.route(requests, gauges),
                        *settings.routers(), *mcp.routes],
        lifespan=[mcp.lifespan],
        exception_handlers={
            DomainError: _on_domain,
            HttpError: _on_http,
            api.ApiError: _on_api,
            HTTPException: _on_litestar,
            Exception: _on_any,
        },
        openapi_config=None,
        request_max_body_size=limits.APP_LIMIT,  # never reached: BodyLimit cuts bodies first
        before_request=_exact_paths,
        middleware=[settings.SettingsGuard],
        template_config=settings.template_config(),
        on_shutdown=list(services.on_shutdown),
        logging_config=None,
        debug=False,
    )
    app.state.services = services
    app.state.mcp = mcp
    # in front of routing, so that they hold for every path, known or not (and requests no
    # route matches, 404 and 405, are counted too: route "unmatched")
    app.asgi_handler = settings.ConsoleHeaders(hosts.HostGuard(limits.BodyLimit(
        segments.EncodedSlashes(metrics.middleware(requests)(app.asgi_handler))), allowed_hosts))
    return app

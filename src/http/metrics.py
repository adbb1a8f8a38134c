"""Prometheus text metrics: request counts and latencies per route, plus gauges the service
supplies at scrape time (log head, projection and worker positions and lag, relay counters)."""

from __future__ import annotations

import bisect
import itertools
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from typing import Any

from litestar import Request, Response, get
from litestar.enums import ScopeType
from litestar.types import ASGIApp, Message, Receive, Scope, Send

from context_service.http.common import threaded

BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)
Gauges = Callable[[], list[tuple[str, str, dict[str, str], float]]]


class RequestMetrics:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.counts: dict[tuple[str, str, str], int] = defaultdict(int)
        self.buckets: dict[tuple[str, str], list[int]] = defaultdict(
            lambda: [0] * (len(BUCKETS) + 1))
        self.sums: dict[tuple[str, str], float] = defaultdict(float)
        self.totals: dict[tuple[str, str], int] = defaultdict(int)

    def observe(self, method: str, route: str, status: int, seconds: float) -> None:
        """Count one request; buckets hold counts per bucket here and are summed (made
        cumulative, as Prometheus wants them) when rendered."""
        key = (method, route)
        with self._lock:
            self.counts[(method, route, str(status))] += 1
            self.buckets[key][bisect.bisect_left(BUCKETS, seconds)] += 1
            self.sums[key] += seconds
            self.totals[key] += 1

    def render(self) -> list[str]:
        out = ["# HELP cs_http_requests_total HTTP requests by route and status.",
               "# TYPE cs_http_requests_total counter"]
        with self._lock:
            for (method, route, status), n in sorted(self.counts.items()):
                out.append(f'cs_http_requests_total{{method="{method}",route="{route}",'
                           f'status="{status}"}} {n}')
            out += ["# HELP cs_http_request_seconds HTTP request latency by route.",
                    "# TYPE cs_http_request_seconds histogram"]
            for (method, route), counts in sorted(self.buckets.items()):
                labels = f'method="{method}",route="{route}"'
                for bound, n in zip(BUCKETS, itertools.accumulate(counts), strict=False):
                    out.append(f'cs_http_request_seconds_bucket{{{labels},le="{bound}"}} {n}')
                total = self.totals[(method, route)]
                out.append(f'cs_http_request_seconds_bucket{{{labels},le="+Inf"}} {total}')
                out.append(f"cs_http_request_seconds_sum{{{labels}}} "
                           f"{self.sums[(method, route)]:.6f}")
                out.append(f"cs_http_request_seconds_count{{{labels}}} {total}")
        return out


def middleware(metrics: RequestMetrics) -> Callable[[ASGIApp], ASGIApp]:
    """Litestar middleware (it runs after routing, so the route template is known)."""

    def factory(app: ASGIApp) -> ASGIApp:
        routes: dict[int, str] = {}  # route template of each handler, worked out once

        async def call(scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] != ScopeType.HTTP:
                await app(scope, receive, send)
                return
            started = time.perf_counter()
            status = 500

            async def capture(message: Message) -> None:
                nonlocal status
                if message["type"] == "http.response.start":
                    status = message["status"]
                await send(message)

            try:
                await app(scope, receive, capture)
            finally:
                handler: Any = scope.get("route_handler")
                route = routes.get(id(handler))
                if route is None:
                    route = routes[id(handler)] = (sorted(handler.paths)[0] if handler is not None
                                                   else "unmatched")
                method: str = scope["method"]  # type: ignore[typeddict-item]  # http scopes have one
                metrics.observe(method, route, status, time.perf_counter() - started)

        return call

    return factory


def render_gauges(gauges: Gauges) -> list[str]:
    out: list[str] = []
    seen: set[str] = set()
    for name, help_text, labels, value in gauges():
        if name not in seen:
            out += [f"# HELP {name} {help_text}", f"# TYPE {name} gauge"]
            seen.add(name)
        text = ",".join(f'{k}="{v}"' for k, v in labels.items())
        out.append(f"{name}{{{text}}} {value:g}" if text else f"{name} {value:g}")
    return out


def route(metrics: RequestMetrics, gauges: Gauges) -> Any:
    @get("/metrics", include_in_schema=False)
    @threaded
    def metrics_route(request: Request[Any, Any, Any]) -> Response[bytes]:
        lines = metrics.render() + render_gauges(gauges)
        return Response(("\n".join(lines) + "\n").encode(),
                        media_type="text/plain; version=0.0.4")

    return metrics_route

"""Prometheus metrics through ``prometheus_client``: request counts and latencies per route,
plus gauges the service supplies at scrape time (log head, projection and worker positions and
lag, relay counters). ``/metrics`` answers OpenMetrics when the scraper asks for it (as a
Prometheus server does), the classic text format otherwise."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import prometheus_client
from litestar import Request, Response, get
from litestar.enums import ScopeType
from litestar.types import ASGIApp, Message, Receive, Scope, Send
from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.exposition import choose_encoder
from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from context_service.http.common import threaded

BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)
Gauges = Callable[[], list[tuple[str, str, dict[str, str], float]]]

# No ``_created`` series: they double the output and no dashboard of ours reads them.
prometheus_client.disable_created_metrics()  # type: ignore[no-untyped-call]


class RequestMetrics:
    """The request counter and latency histogram of one app, in a registry of its own."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry(auto_describe=True)
        self.requests = Counter("cs_http_requests", "HTTP requests by route and status.",
                                ("method", "route", "status"), registry=self.registry)
        self.latency = Histogram("cs_http_request_seconds", "HTTP request latency by route.",
                                 ("method", "route"), buckets=BUCKETS, registry=self.registry)
        self._children: dict[tuple[str, str, int], tuple[Any, Any]] = {}

    def observe(self, method: str, route: str, status: int, seconds: float) -> None:
        """Count one request (the labelled children are looked up once per key)."""
        key = (method, route, status)
        children = self._children.get(key)
        if children is None:
            children = self._children[key] = (
                self.requests.labels(method, route, str(status)),
                self.latency.labels(method, route))
        children[0].inc()
        children[1].observe(seconds)


class ScrapeGauges(Collector):
    """The service's scrape-time values as metric families: a name ending in ``_total`` is a
    counter (the OpenMetrics convention), any other a gauge."""

    def __init__(self, gauges: Gauges) -> None:
        self.gauges = gauges

    def collect(self) -> Iterator[Metric]:
        families: dict[str, tuple[Metric, list[str]]] = {}
        for name, help_text, labels, value in self.gauges():
            found = families.get(name)
            if found is None:
                keys = list(labels)
                family: Metric = (CounterMetricFamily(name, help_text, labels=keys)
                                  if name.endswith("_total")
                                  else GaugeMetricFamily(name, help_text, labels=keys))
                found = families[name] = (family, keys)
            family, keys = found
            family.add_metric([labels.get(k, "") for k in keys], value)  # type: ignore[attr-defined]
        yield from (family for family, _ in families.values())


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


def route(metrics: RequestMetrics, gauges: Gauges) -> Any:
    metrics.registry.register(ScrapeGauges(gauges))

    @get("/metrics", include_in_schema=False)
    @threaded
    def metrics_route(request: Request[Any, Any, Any]) -> Response[bytes]:
        encode, content_type = choose_encoder(request.headers.get("accept", ""))
        return Response(encode(metrics.registry), media_type=content_type)

    return metrics_route

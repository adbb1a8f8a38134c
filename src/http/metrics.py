"""Prometheus metrics through ``prometheus_client``: request counts and latencies per route,
plus gauges the service supplies at scrape time (log head, projection and worker positions and
lag, relay counters). ``/metrics`` answers OpenMetrics when the scraper asks for it (as a
Prometheus server does), the classic text format otherwise."""

from __future__ import annotations

import asyncio
import logging
import threading
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

from context_service.http import connections, shutdown
from context_service.http.common import threaded

log = logging.getLogger(__name__)
BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)
Gauges = Callable[[], list[tuple[str, str, dict[str, str], float]]]
Series = tuple[str, tuple[tuple[str, str], ...]]  # a metric's name and label pairs
# the method label's values besides "other": what a client sends cannot add a series
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
# the status of a request cancelled before its answer began because its client closed the
# connection (nginx's "client closed request"): no failure of the service's
CLIENT_GONE = 499

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
        self.scrape_failures = Counter(
            "cs_scrape_failures", "Scrapes answered without the service's values (they could "
            "not be read: the database is down, say).", registry=self.registry)
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
    counter (the OpenMetrics convention), any other a gauge.

    A counter never goes down while the process lives: the relay and snapshot workers are made
    anew each time this instance becomes the leader, counting from zero again, so a value below
    the last one seen is added to what was counted before. And the scrape answers when the values
    cannot be read (the database is down, when an operator looks): the request metrics go out,
    and ``failed`` counts a scrape that went without the rest (``cs_scrape_failures_total``)."""

    def __init__(self, gauges: Gauges, failed: Callable[[], None] = lambda: None) -> None:
        self.gauges = gauges
        self.failed = failed
        self._lock = threading.Lock()  # scrapes run on request threads, side by side
        # per counter series: the last value handed over, and what earlier lives counted
        self._last: dict[Series, float] = {}
        self._before: dict[Series, float] = {}

    def collect(self) -> Iterator[Metric]:
        try:
            values = self.gauges()
        except Exception:
            log.warning("metrics: the service's values could not be read", exc_info=True)
            self.failed()
            values = []
        with self._lock:
            families = self._families(values)
        yield from families

    def _families(self, values: list[tuple[str, str, dict[str, str], float]]) -> list[Metric]:
        grouped: dict[str, tuple[str, list[tuple[dict[str, str], float]]]] = {}
        for name, help_text, labels, value in values:
            grouped.setdefault(name, (help_text, []))[1].append((labels, value))
        out: list[Metric] = []
        for name, (help_text, samples) in grouped.items():
            # every label any sample has: a sample without one gets it empty (a key dropped
            # instead would make two samples one series, which a scraper refuses)
            keys = list(dict.fromkeys(k for labels, _ in samples for k in labels))
            counter = name.endswith("_total")
            family: Any = (CounterMetricFamily(name, help_text, labels=keys) if counter
                           else GaugeMetricFamily(name, help_text, labels=keys))
            for labels, value in samples:
                row = [labels.get(k, "") for k in keys]
                series = (name, tuple(zip(keys, row, strict=True)))
                family.add_metric(row, self._counted(series, value) if counter else value)
            out.append(family)
        return out

    def _counted(self, series: Series, value: float) -> float:
        """``value`` carried on from the series' earlier lives in this process."""
        last = self._last.get(series)
        if last is not None and value < last:  # a new worker counting from zero again
            self._before[series] = self._before.get(series, 0.0) + last
        self._last[series] = value
        return self._before.get(series, 0.0) + value


def middleware(metrics: RequestMetrics) -> Callable[[ASGIApp], ASGIApp]:
    """Litestar middleware (it runs after routing, so the route template is known), or a wrapper
    of the app's ASGI handler, in front of routing: the router leaves the matched handler in the
    scope, and a request no route matches (404, 405) is counted as route ``unmatched``. Either
    way the labels come from a bounded set: a client cannot add a series per path it makes up,
    nor per method (any method not of HTTP's usual ones is ``other``)."""

    def factory(app: ASGIApp) -> ASGIApp:
        routes: dict[int, str] = {}  # route template of each handler, worked out once

        async def call(scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] != ScopeType.HTTP:
                await app(scope, receive, send)
                return
            started = time.perf_counter()
            status, answered = 500, False

            async def capture(message: Message) -> None:
                nonlocal status, answered
                if message["type"] == "http.response.start":
                    status, answered = message["status"], True
                await send(message)

            try:
                await app(scope, receive, capture)
            except asyncio.CancelledError:
                # the drain's cancel (counted as its 503, below) or the server's is no client's
                if not answered and connections.abandoned_by_client(asyncio.current_task()):
                    status = CLIENT_GONE
                raise
            finally:
                # what the client got, not what its handler said after; unless it had gone
                # before the 503 (it got nothing: its 499 stands)
                if status != CLIENT_GONE and shutdown.answered_unavailable(asyncio.current_task()):
                    status = 503
                handler: Any = scope.get("route_handler")
                route = routes.get(id(handler))
                if route is None:
                    route = routes[id(handler)] = (sorted(handler.paths)[0] if handler is not None
                                                   else "unmatched")
                method: str = scope["method"]  # type: ignore[typeddict-item]  # http scopes have one
                metrics.observe(method if method in METHODS else "other", route, status,
                                time.perf_counter() - started)

        return call

    return factory


def route(metrics: RequestMetrics, gauges: Gauges) -> Any:
    metrics.registry.register(ScrapeGauges(gauges, metrics.scrape_failures.inc))

    @get("/metrics", include_in_schema=False)
    @threaded
    def metrics_route(request: Request[Any, Any, Any]) -> Response[bytes]:
        encode, content_type = choose_encoder(request.headers.get("accept", ""))
        return Response(encode(metrics.registry), media_type=content_type)

    return metrics_route

"""``/metrics`` under a hostile or unlucky scrape: no client can add a time series by what it
sends, label values of every shape survive the exposition, a counter a worker hands over never
goes down when that worker starts again in the process, and the scrape still answers when the
service's own values cannot be read (the database is down: exactly when an operator looks)."""

from __future__ import annotations

from collections.abc import Callable

from litestar import Litestar, get
from litestar.params import FromPath
from litestar.testing import TestClient
from prometheus_client import CollectorRegistry
from prometheus_client.exposition import generate_latest
from prometheus_client.openmetrics import exposition as openmetrics_exposition
from prometheus_client.openmetrics import parser as openmetrics_parser
from prometheus_client.parser import text_string_to_metric_families

from context_service.http.metrics import Gauges, RequestMetrics, ScrapeGauges, middleware, route
from tests.api.conftest import Api

Values = list[tuple[str, str, dict[str, str], float]]


def families(text: str) -> dict[str, list[tuple[dict[str, str], float]]]:
    return {f.name: [(s.labels, s.value) for s in f.samples if s.name == f.name
                     or s.name == f"{f.name}_total"]
            for f in text_string_to_metric_families(text)}


def scrape(gauges: Gauges) -> Callable[[], str]:
    registry = CollectorRegistry()
    registry.register(ScrapeGauges(gauges))
    return lambda: generate_latest(registry).decode()


def test_a_client_cannot_add_series_by_inventing_methods(api: Api) -> None:
    before = families(api.get("/metrics").text)["cs_http_requests"]
    for n in range(20):
        api.request(f"FOO{n}", "/v1/contexts")
        api.request(f"BAR{n}", f"/no/such/route/{n}")
    after = families(api.get("/metrics").text)["cs_http_requests"]
    methods = {labels["method"] for labels, _ in after}
    assert methods <= {"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "other"}
    assert len(after) - len(before) <= 3  # /metrics itself, and "other" on two routes
    routes = {labels["route"] for labels, _ in after}
    assert not any(r.startswith("/no/such") for r in routes)


def test_label_values_of_any_shape_survive_both_formats() -> None:
    awkward = ['quo"te', "back\\slash", "new\nline", "tab\tand ünïcode", 'all\\"\n']
    registry = CollectorRegistry()
    registry.register(ScrapeGauges(lambda: [
        ("cs_odd", "Help with \\ and \n inside.", {"projection": v}, float(i))
        for i, v in enumerate(awkward)]))
    classic = {s.labels["projection"]: s.value
               for f in text_string_to_metric_families(generate_latest(registry).decode())
               for s in f.samples}
    strict = {s.labels["projection"]: s.value
              for f in openmetrics_parser.text_string_to_metric_families(
                  openmetrics_exposition.generate_latest(registry).decode())
              for s in f.samples}
    assert classic == strict == {v: float(i) for i, v in enumerate(awkward)}


def test_a_counter_does_not_go_down_when_its_worker_starts_again() -> None:
    """The relay and snapshot workers are made anew each time this instance becomes the
    leader; their counts start from zero, the exposed counter goes on from where it was."""
    handed: list[Values] = [
        [("cs_relay_published_total", "Published.", {}, 7.0),
         ("cs_relay_position", "Position.", {}, 70.0)],
        [],  # standing by: another instance leads
        [("cs_relay_published_total", "Published.", {}, 2.0),
         ("cs_relay_position", "Position.", {}, 72.0)],
        [("cs_relay_published_total", "Published.", {}, 5.0),
         ("cs_relay_position", "Position.", {}, 75.0)]]
    read = scrape(lambda: handed.pop(0))
    seen = [families(read()) for _ in range(4)]
    assert [f.get("cs_relay_published") for f in seen] == [
        [({}, 7.0)], None, [({}, 9.0)], [({}, 12.0)]]
    # a gauge is what the worker says, lower or not
    assert [f["cs_relay_position"] for f in seen if f] == [[({}, 70.0)], [({}, 72.0)],
                                                           [({}, 75.0)]]


def test_counters_are_kept_apart_per_label_set() -> None:
    handed: list[Values] = [
        [("cs_projection_failures_total", "F.", {"projection": "a"}, 3.0),
         ("cs_projection_failures_total", "F.", {"projection": "b"}, 1.0)],
        [("cs_projection_failures_total", "F.", {"projection": "a"}, 0.0),
         ("cs_projection_failures_total", "F.", {"projection": "b"}, 4.0)]]
    read = scrape(lambda: handed.pop(0))
    read()
    assert sorted((labels["projection"], value)
                  for labels, value in families(read())["cs_projection_failures"]) == [
        ("a", 3.0), ("b", 4.0)]


def test_the_scrape_answers_when_the_service_values_cannot_be_read() -> None:
    def broken() -> Values:
        raise OSError("connection refused")

    requests = RequestMetrics()
    requests.registry.register(ScrapeGauges(broken, requests.scrape_failures.inc))
    requests.observe("GET", "/healthz", 200, 0.001)
    registry = requests.registry
    text = generate_latest(registry).decode()  # raised before: /metrics answered 500
    assert families(text)["cs_http_requests"] == [
        ({"method": "GET", "route": "/healthz", "status": "200"}, 1.0)]
    assert families(text)["cs_scrape_failures"] == [({}, 1.0)]
    text = generate_latest(registry).decode()
    assert families(text)["cs_scrape_failures"] == [({}, 2.0)]


def test_samples_of_one_family_with_different_labels_stay_distinct() -> None:
    read = scrape(lambda: [("cs_cache_entries", "E.", {}, 1.0),
                           ("cs_cache_entries", "E.", {"cache": "word_ids"}, 2.0)])
    text = read()
    strict = [s for f in openmetrics_parser.text_string_to_metric_families(
        text + "# EOF\n") for s in f.samples]
    assert sorted((s.labels.get("cache", ""), s.value) for s in strict) == [
        ("", 1.0), ("word_ids", 2.0)]


def test_requests_no_route_matches_are_counted_in_a_bounded_set_of_series() -> None:
    """In front of routing (as the app's ASGI handler is wrapped), 404 and 405 answers are
    counted too: one ``unmatched`` route, and ``other`` for any method a client makes up."""
    requests = RequestMetrics()

    @get("/things/{name:str}", sync_to_thread=False)
    def thing(name: FromPath[str]) -> str:
        return name

    app = Litestar([thing, route(requests, list)])
    app.asgi_handler = middleware(requests)(app.asgi_handler)
    with TestClient(app=app) as client:
        for n in range(10):
            assert client.get(f"/things/{n}").status_code == 200
            assert client.get(f"/made/up/{n}").status_code == 404
            assert client.request(f"FOO{n}", "/things/x").status_code == 405
        text = client.get("/metrics").text
    assert sorted((labels["method"], labels["route"], labels["status"], value)
                  for labels, value in families(text)["cs_http_requests"]) == [
        ("GET", "/things/{name:str}", "200", 10.0), ("GET", "unmatched", "404", 10.0),
        ("other", "unmatched", "405", 10.0)]

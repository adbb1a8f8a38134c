"""``/metrics`` as a Prometheus server reads it: both exposition formats parse with the official
parsers, follow the OpenMetrics rules (HELP and TYPE once per family, before its samples;
counters end in ``_total``; histograms cumulative up to ``le="+Inf"`` with ``_sum`` and
``_count``), keep every documented name and label, and count what happened."""

from __future__ import annotations

import math
import re
from collections import defaultdict

from prometheus_client import CollectorRegistry
from prometheus_client.exposition import generate_latest
from prometheus_client.openmetrics import parser as openmetrics_parser
from prometheus_client.parser import text_string_to_metric_families

from context_service.http.metrics import ScrapeGauges
from tests.api.conftest import Api, context_body

OPENMETRICS = "application/openmetrics-text; version=1.0.0"
DOCUMENTED = ("cs_http_requests_total", "cs_http_request_seconds", "cs_log_head_position",
              "cs_projection_position", "cs_projection_lag", "cs_group_commit_transactions",
              "cs_group_commit_appends", "cs_group_commit_seconds", "cs_pack_corpus_passages",
              "cs_pack_matrix_rows", "cs_pack_matrix_indexes", "cs_pack_cache_complete",
              "cs_pack_exact_cosine", "cs_pack_token_ids")
SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})? (\S+)$")


def violations(text: str) -> list[str]:
    """Where the classic text format breaks the OpenMetrics family rules."""
    found: list[str] = []
    helps: dict[str, int] = defaultdict(int)
    types: dict[str, str] = {}
    current = ""
    finished: set[str] = set()
    for line in text.splitlines():
        if line.startswith("# HELP "):
            name = line.split()[2]
            helps[name] += 1
        elif line.startswith("# TYPE "):
            _, _, name, kind = line.split()
            if name in types:
                found.append(f"TYPE {name} twice")
            if helps[name] != 1:
                found.append(f"TYPE {name} without exactly one HELP before it")
            if kind == "counter" and not name.endswith("_total"):
                found.append(f"counter {name} does not end in _total")
            types[name] = kind
            if current:
                finished.add(current)
            current = name
        elif line and not line.startswith("#"):
            match = SAMPLE.match(line)
            if match is None:
                found.append(f"unparsable sample {line!r}")
                continue
            sample = match.group(1)
            owner = next((n for n in (sample, re.sub(r"_(bucket|sum|count)$", "", sample))
                          if n in types), None)
            if owner is None:
                found.append(f"sample {sample} before its TYPE")
            elif owner != current or owner in finished:
                found.append(f"samples of {owner} are not contiguous")
    return found


def histograms_are_cumulative(text: str, family: str) -> list[str]:
    found: list[str] = []
    [parsed] = [f for f in text_string_to_metric_families(text) if f.name == family]
    assert parsed.type == "histogram"
    series: dict[tuple[tuple[str, str], ...], dict[str, list[tuple[float, float]] | float]] = {}
    for s in parsed.samples:
        key = tuple(sorted((k, v) for k, v in s.labels.items() if k != "le"))
        entry = series.setdefault(key, {"buckets": []})
        if s.name.endswith("_bucket"):
            entry["buckets"].append((float(s.labels["le"]), s.value))  # type: ignore[union-attr]
        else:
            entry[s.name.rsplit("_", 1)[1]] = s.value
    assert series
    for key, entry in series.items():
        buckets = entry["buckets"]
        assert isinstance(buckets, list)
        bounds, counts = [b for b, _ in buckets], [c for _, c in buckets]
        if bounds != sorted(bounds) or not bounds or not math.isinf(bounds[-1]):
            found.append(f"{key}: buckets not ascending up to +Inf")
        if counts != sorted(counts):
            found.append(f"{key}: bucket counts not cumulative")
        if "sum" not in entry or entry.get("count") != counts[-1]:
            found.append(f"{key}: _count differs from the +Inf bucket, or no _sum")
    return found


def traffic(api: Api) -> None:
    assert api.post("/v1/contexts", context_body()).status_code == 201
    assert api.post("/v1/contexts", context_body()).status_code == 409
    assert api.get("/v1/namespaces/team1/contexts").status_code == 200
    assert api.get("/v1/namespaces/team1/contexts/absent").status_code == 404
    assert api.get("/no/such/route").status_code == 404


def test_text_format_parses_and_follows_the_openmetrics_rules(api: Api) -> None:
    traffic(api)
    response = api.get("/metrics")
    assert response.headers["content-type"].startswith("text/plain; version=0.0.4")
    text = response.text
    families = {f.name: f for f in text_string_to_metric_families(text)}
    assert violations(text) == []
    assert histograms_are_cumulative(text, "cs_http_request_seconds") == []
    names = {s.name for f in families.values() for s in f.samples} | set(families)
    assert [n for n in DOCUMENTED if n not in names] == []
    for family in families.values():
        if family.type == "counter":
            assert all(s.name.endswith("_total") for s in family.samples), family.name


def test_openmetrics_format_parses_with_the_strict_parser(api: Api) -> None:
    traffic(api)
    response = api.get("/metrics", headers={"Accept": OPENMETRICS})
    assert response.headers["content-type"].startswith("application/openmetrics-text")
    assert response.text.endswith("# EOF\n")
    families = {f.name: f for f in openmetrics_parser.text_string_to_metric_families(
        response.text)}  # raises on any break of the format's rules
    assert families["cs_http_requests"].type == "counter"
    assert families["cs_http_request_seconds"].type == "histogram"
    assert families["cs_log_head_position"].type == "gauge"


def test_requests_are_counted_per_route_and_status(api: Api) -> None:
    traffic(api)
    api.get("/v1/namespaces/team1/contexts")
    families = {f.name: f for f in text_string_to_metric_families(api.get("/metrics").text)}
    counts = {(s.labels["method"], s.labels["route"], s.labels["status"]): s.value
              for s in families["cs_http_requests"].samples}
    listing = ("GET", "/v1/namespaces/{namespace:str}/contexts", "200")
    assert counts[("POST", "/v1/contexts", "201")] == 1
    assert counts[("POST", "/v1/contexts", "409")] == 1
    assert counts[listing] == 2
    assert counts[("GET", "/v1/namespaces/{namespace:str}/contexts/{name:str}", "404")] == 1
    latency = {(s.name, s.labels.get("route"), s.labels.get("le")): s.value
               for s in families["cs_http_request_seconds"].samples}
    assert latency[("cs_http_request_seconds_count", listing[1], None)] == 2
    assert latency[("cs_http_request_seconds_bucket", listing[1], "+Inf")] == 2
    assert latency[("cs_http_request_seconds_sum", listing[1], None)] > 0
    head = families["cs_log_head_position"].samples[0].value
    assert head >= 1


def test_worker_values_become_counters_or_gauges_by_name() -> None:
    """The shapes the relay, reconciler and snapshot workers hand over at scrape time."""
    registry = CollectorRegistry()
    registry.register(ScrapeGauges(lambda: [
        ("cs_relay_published_total", "Events stored in JetStream.", {}, 7),
        ("cs_relay_connected", "1 when connected to NATS.", {}, 1),
        ("cs_reconciler_active", "1 while this instance holds the lock.", {}, 1),
        ("cs_reconciler_total", "Reconciler passes.", {"what": "passes"}, 3),
        ("cs_reconciler_total", "Reconciler passes.", {"what": "errors"}, 0),
        ("cs_snapshot_passes", "Snapshot passes.", {"worker": "snapshots"}, 2)]))
    text = generate_latest(registry).decode()
    assert violations(text) == []
    families = {f.name: f for f in text_string_to_metric_families(text)}
    assert {n: f.type for n, f in families.items()} == {
        "cs_relay_published": "counter", "cs_relay_connected": "gauge",
        "cs_reconciler_active": "gauge", "cs_reconciler": "counter",
        "cs_snapshot_passes": "gauge"}
    assert [(s.name, s.labels, s.value) for s in families["cs_reconciler"].samples] == [
        ("cs_reconciler_total", {"what": "passes"}, 3), ("cs_reconciler_total",
                                                         {"what": "errors"}, 0)]
    assert 'cs_relay_published_total 7.0' in text

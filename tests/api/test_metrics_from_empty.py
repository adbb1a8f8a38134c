"""Metrics counted from an empty service: one request of each kind gives counts of exactly one
(a service of the test's own, so no other test's requests or events are counted)."""

from __future__ import annotations

from tests.api.conftest import Api, context_body


def test_metrics_report_requests_head_and_projection_lag(api: Api) -> None:
    api.post("/v1/contexts", context_body())
    api.get("/v1/namespaces/team1/contexts")
    text = api.get("/metrics").text
    assert 'cs_http_requests_total{method="POST",route="/v1/contexts",status="201"} 1' in text
    assert ('cs_http_request_seconds_count{method="GET",'
            'route="/v1/namespaces/{namespace:str}/contexts"} 1') in text
    assert "cs_log_head_position 1" in text
    assert "cs_group_commit_transactions 1" in text
    assert "cs_group_commit_appends 1" in text
    assert 'cs_projection_position{projection="context_catalog"}' in text
    assert 'cs_projection_lag{projection="audit_log"}' in text

"""History for auditors: every event of a context in order; reads as of a past point."""

from __future__ import annotations

from tests.api.conftest import Api, context_body

BASE = "/v1/namespaces/team1/contexts/research-memory"
ALICE = "user:alice"


def _grant(api: Api, name: str, perms: list[str]) -> int:
    r = api.put(BASE + "/grants", {"subject": {"kind": "agent", "name": name},
                                   "permissions": perms})
    assert r.status_code == 200
    return int(r.headers["x-context-position"])


def test_history_lists_every_event_in_order_and_pages(api: Api) -> None:
    alice = api.as_(ALICE)
    assert alice.post("/v1/contexts", context_body()).status_code == 201
    _grant(alice, "a", ["read"])
    _grant(alice, "b", ["read", "write"])
    full = alice.get(BASE + "/history").json()
    names = [i["name"] for i in full["items"]]
    assert names == ["ContextCreated", "AccessGranted", "AccessGranted"]
    positions = [i["position"] for i in full["items"]]
    assert positions == sorted(positions)
    assert full["items"][1]["actor"] == ALICE
    assert full["items"][2]["data"]["grant"]["permissions"] == ["read", "write"]
    assert "nextCursor" not in full
    first = alice.get(BASE + "/history?limit=2").json()
    assert [i["position"] for i in first["items"]] == positions[:2]
    rest = alice.get(BASE + "/history?limit=2&cursor=" + first["nextCursor"]).json()
    assert [i["position"] for i in rest["items"]] == positions[2:]
    assert "nextCursor" not in rest


def test_history_requires_administer(api: Api) -> None:
    alice = api.as_(ALICE)
    alice.post("/v1/contexts", context_body())
    _grant(alice, "reader", ["read"])
    assert api.as_("agent:reader").get(BASE + "/history").status_code == 404
    assert alice.get(BASE + "/history?cursor=nope").status_code == 400


def test_reads_as_of_a_position_show_the_past(api: Api) -> None:
    alice = api.as_(ALICE)
    alice.post("/v1/contexts", context_body())
    before = _grant(alice, "a", ["read"])
    after = _grant(alice, "a", ["read", "write"])
    alice.delete(BASE + "/grants", {"kind": "agent", "name": "a"})
    past = alice.get(BASE + f"/grants?asOfPosition={before}").json()["items"]
    assert [g["permissions"] for g in past if g["subject"]["name"] == "a"] == [["read"]]
    later = alice.get(BASE + f"/grants?asOfPosition={after}").json()["items"]
    assert [g["permissions"] for g in later if g["subject"]["name"] == "a"] == [["read", "write"]]
    now = alice.get(BASE + "/grants").json()["items"]
    assert all(g["subject"]["name"] != "a" for g in now)
    # Access is judged now: agent:a lost its grant, so the past is hidden from it too.
    assert api.as_("agent:a").get(BASE + f"?asOfPosition={before}").status_code == 404
    then = alice.get(BASE + f"?asOfPosition={before}").json()
    assert then["effectiveAccess"] == ["read", "write", "attach", "derive", "administer"]
    listed = alice.get(f"/v1/namespaces/team1/contexts?asOfPosition={before - 1}")
    assert [c["name"] for c in listed.json()["items"]] == ["research-memory"]
    assert alice.get("/v1/namespaces/team1/contexts?asOfPosition=0").json() == {"items": []}


def test_the_bootstrap_admin_sees_a_deleted_context_as_of_before_deletion(api: Api) -> None:
    alice = api.as_(ALICE)
    created = alice.post("/v1/contexts", context_body())
    position = int(created.headers["x-context-position"])
    assert alice.delete(BASE).status_code == 204
    admin = api.as_("service:context-service-admin")
    assert admin.get(BASE).status_code == 404
    assert admin.get(BASE + f"?asOfPosition={position}").json()["name"] == "research-memory"


def test_as_of_a_time_before_creation_is_not_found(api: Api) -> None:
    alice = api.as_(ALICE)
    alice.post("/v1/contexts", context_body())
    assert alice.get(BASE + "?asOf=2000-01-01T00:00:00Z").status_code == 404
    assert alice.get(BASE + "?asOf=2999-01-01T00:00:00Z").status_code == 200
    assert alice.get(BASE + "?asOf=yesterday").status_code == 400


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

"""History for auditors: every event of a context in order; reads as of a past point. (The
metrics counted from an empty service are in ``test_metrics_from_empty.py``.)"""

from __future__ import annotations

import pytest

from tests.api.conftest import Api
from tests.api.namespaced import Namespaced, namespaced

# one service for the module: every test's context lives in a namespace of its own
pytestmark = pytest.mark.shared_service
ALICE = "user:alice"


@pytest.fixture
def api(api: Api) -> Namespaced:
    """The module's client over a namespace of the test's own."""
    return namespaced(api)


def _grant(api: Namespaced, name: str, perms: list[str]) -> int:
    r = api.put(api.context + "/grants", {"subject": {"kind": "agent", "name": name},
                                          "permissions": perms})
    assert r.status_code == 200
    return int(r.headers["x-context-position"])


def test_history_lists_every_event_in_order_and_pages(api: Namespaced) -> None:
    alice = api.as_(ALICE)
    assert alice.post("/v1/contexts", api.context_body()).status_code == 201
    _grant(alice, "a", ["read"])
    _grant(alice, "b", ["read", "write"])
    full = alice.get(api.context + "/history").json()
    names = [i["name"] for i in full["items"]]
    assert names == ["ContextCreated", "AccessGranted", "AccessGranted"]
    positions = [i["position"] for i in full["items"]]
    assert positions == sorted(positions)
    assert full["items"][1]["actor"] == ALICE
    assert full["items"][2]["data"]["grant"]["permissions"] == ["read", "write"]
    assert "nextCursor" not in full
    first = alice.get(api.context + "/history?limit=2").json()
    assert [i["position"] for i in first["items"]] == positions[:2]
    rest = alice.get(api.context + "/history?limit=2&cursor=" + first["nextCursor"]).json()
    assert [i["position"] for i in rest["items"]] == positions[2:]
    assert "nextCursor" not in rest


def test_history_requires_administer(api: Namespaced) -> None:
    alice = api.as_(ALICE)
    alice.post("/v1/contexts", api.context_body())
    _grant(alice, "reader", ["read"])
    assert api.as_("agent:reader").get(api.context + "/history").status_code == 404
    assert alice.get(api.context + "/history?cursor=nope").status_code == 400


def test_reads_as_of_a_position_show_the_past(api: Namespaced) -> None:
    alice = api.as_(ALICE)
    alice.post("/v1/contexts", api.context_body())
    before = _grant(alice, "a", ["read"])
    after = _grant(alice, "a", ["read", "write"])
    alice.delete(api.context + "/grants", {"kind": "agent", "name": "a"})
    past = alice.get(api.context + f"/grants?asOfPosition={before}").json()["items"]
    assert [g["permissions"] for g in past if g["subject"]["name"] == "a"] == [["read"]]
    later = alice.get(api.context + f"/grants?asOfPosition={after}").json()["items"]
    assert [g["permissions"] for g in later if g["subject"]["name"] == "a"] == [["read", "write"]]
    now = alice.get(api.context + "/grants").json()["items"]
    assert all(g["subject"]["name"] != "a" for g in now)
    # Access is judged now: agent:a lost its grant, so the past is hidden from it too.
    assert api.as_("agent:a").get(api.context + f"?asOfPosition={before}").status_code == 404
    then = alice.get(api.context + f"?asOfPosition={before}").json()
    assert then["effectiveAccess"] == ["read", "write", "attach", "derive", "administer"]
    listed = alice.get(f"{api.contexts}?asOfPosition={before - 1}")
    assert [c["name"] for c in listed.json()["items"]] == ["research-memory"]
    assert alice.get(api.contexts + "?asOfPosition=0").json() == {"items": []}


def test_the_bootstrap_admin_sees_a_deleted_context_as_of_before_deletion(api: Namespaced) -> None:
    alice = api.as_(ALICE)
    created = alice.post("/v1/contexts", api.context_body())
    position = int(created.headers["x-context-position"])
    assert alice.delete(api.context).status_code == 204
    admin = api.as_("service:context-service-admin")
    assert admin.get(api.context).status_code == 404
    assert admin.get(api.context + f"?asOfPosition={position}").json()["name"] == "research-memory"


def test_as_of_a_time_before_creation_is_not_found(api: Namespaced) -> None:
    alice = api.as_(ALICE)
    alice.post("/v1/contexts", api.context_body())
    assert alice.get(api.context + "?asOf=2000-01-01T00:00:00Z").status_code == 404
    assert alice.get(api.context + "?asOf=2999-01-01T00:00:00Z").status_code == 200
    assert alice.get(api.context + "?asOf=yesterday").status_code == 400


"""Spec 1.1.4: a path parameter matches one path segment, percent-decoded, so a segment holding
an encoded slash (``%2F``) reaches its route and gets that route's ordinary not-found, while a
raw slash makes another, unknown path. Paths without one route as before."""

from __future__ import annotations

import pytest

from context_service.http.segments import IN_SEGMENT_SLASH, routed_path
from tests.api.conftest import Api
from tests.api.namespaced import Namespaced, namespaced

pytestmark = [pytest.mark.postgres, pytest.mark.shared_service]
CONTEXT_NOT_FOUND = {"error": "not_found", "message": "context resource not found"}
ROUTE_NOT_FOUND = {"error": "not_found", "message": "route not found"}


@pytest.fixture
def alice(api: Api) -> Namespaced:
    alice = namespaced(api).as_("user:alice")
    assert alice.post("/v1/contexts", alice.context_body()).status_code == 201
    return alice


def test_the_routed_path_keeps_each_segment_one_segment() -> None:
    assert routed_path(b"/v1/namespaces/ns/contexts/a%2Fb") == (
        f"/v1/namespaces/ns/contexts/a{IN_SEGMENT_SLASH}b")
    assert routed_path(b"/v1/x/%2f%20y%2F") == f"/v1/x/{IN_SEGMENT_SLASH} y{IN_SEGMENT_SLASH}"


@pytest.mark.parametrize("suffix", ["a%2Fb", "research-memory%2Fsnapshots", "a%2fb"])
def test_a_context_name_with_an_encoded_slash_is_the_context_not_found(
        alice: Namespaced, suffix: str) -> None:
    for resp in (alice.get(f"{alice.contexts}/{suffix}"),
                 alice.get(f"{alice.contexts}/{suffix}/grants"),
                 alice.delete(f"{alice.contexts}/{suffix}")):
        assert (resp.status_code, resp.json()) == (404, CONTEXT_NOT_FOUND), resp.text


def test_a_snapshot_name_with_an_encoded_slash_is_the_context_not_found(
        alice: Namespaced) -> None:
    resp = alice.get(f"{alice.context}/snapshots/s%2Fx")
    assert (resp.status_code, resp.json()["error"]) == (404, "not_found"), resp.text
    assert resp.json()["message"] != "route not found"


def test_a_pool_name_with_an_encoded_slash_is_the_pool_not_found(alice: Namespaced) -> None:
    resp = alice.get("/v1/sandbox-pools/a%2Fb")
    assert (resp.status_code, resp.json()) == (
        404, {"error": "not_found", "message": "sandbox pool not found"}), resp.text


def test_a_raw_slash_is_still_another_path_and_plain_names_still_route(
        alice: Namespaced) -> None:
    resp = alice.get(f"{alice.contexts}/a/b")
    assert (resp.status_code, resp.json()) == (404, ROUTE_NOT_FOUND), resp.text
    assert alice.get(alice.context).status_code == 200

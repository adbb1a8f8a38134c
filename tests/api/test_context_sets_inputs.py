"""No input makes the context-set or library routes answer 500: generated bodies (the shapes'
own keys with values of any JSON type, mixed with unknown keys) and odd path segments, each
answered with its family's error body or a success."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from context_service.config import Settings
from tests.api.conftest import Api
from tests.api.namespaced import Namespaced, namespaced
from tests.api.sets_namespaced import create_set, seed_workspace, sets, token
from tests.support.hypothesis_profiles import scaled

# one service for the module: every test's workspace is a namespace of its own
pytestmark = [pytest.mark.postgres, pytest.mark.shared_service]
AGENT = "/api/agent/v1"

scalars = st.one_of(st.none(), st.booleans(), st.integers(-3, 300),
                    st.floats(allow_nan=False, allow_infinity=False),
                    st.sampled_from(("", " ", "finance", "a/b", "Who is our CFO?", "\x00", "é",
                                     "company-facts/cfo", "x" * 250)),
                    st.text(max_size=20))
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3)
                      | st.dictionaries(st.sampled_from(("id", "term", "question", "answer",
                                                         "text", "x")), inner, max_size=3),
                      max_leaves=10)
SET_KEYS = ("id", "name", "description", "collections", "verifiedAnswers", "definitions",
            "instructions", "requiredEvidence", "queryTemplates")
AGENT_KEYS = ("query", "limit", "contextSetId", "term", "question")


def bodies(keys: tuple[str, ...]) -> st.SearchStrategy[dict[str, Any]]:
    return st.dictionaries(st.sampled_from((*keys, "extra")), values, max_size=5)


@pytest.fixture(scope="module")
def module_settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    """The suite's settings without the per-credential rate limit."""
    return Settings(data_dir=tmp_path_factory.mktemp("sets-inputs"),
                    sandbox_image="busybox:1.36", kube_mode="off",
                    workers=("projections", "query-index"), agent_rate_per_second=0)


@pytest.fixture
def seeded(api: Api) -> tuple[Namespaced, str]:
    """A workspace of the test's own with the set ``finance``, as ``user:alice``; a token."""
    own = namespaced(api, "acme")
    seed_workspace(own)
    create_set(own, "finance")
    return own.as_("user:alice"), token(own)


FUZZ = hypothesis_settings(max_examples=scaled(40), deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture])


@FUZZ
@given(body=bodies(SET_KEYS), segment=st.sampled_from(("finance", "new", "%00", "a%2Fb", "A")))
def test_context_set_writes_never_fail(seeded: tuple[Namespaced, str], body: dict[str, Any],
                                       segment: str) -> None:
    alice, _ = seeded
    for resp in (alice.post(sets(alice), body), alice.put(f"{sets(alice)}/{segment}", body)):
        assert resp.status_code in (200, 201, 400, 404, 409), resp.text
        if resp.status_code >= 400:
            assert list(resp.json()) == ["error", "message"]


@FUZZ
@given(body=bodies(AGENT_KEYS),
       route=st.sampled_from(("context-sets/list", "context-sets/get", "definitions/lookup",
                              "verified-answers/match")))
def test_library_routes_never_fail(seeded: tuple[Namespaced, str], body: dict[str, Any],
                                   route: str) -> None:
    alice, value = seeded
    resp = alice.as_(None).post(f"{AGENT}/{route}", body,
                                headers={"Authorization": f"Bearer {value}"})
    assert resp.status_code in (200, 400, 404), resp.text
    if resp.status_code >= 400:
        assert set(resp.json()) <= {"code", "message", "details"}


@pytest.mark.parametrize("segment", ["%00", "a%2Fb", "%F0%9F%98%80", "x" * 300, "%25", "..."])
def test_odd_path_segments_are_not_found(seeded: tuple[Namespaced, str], segment: str) -> None:
    alice, _ = seeded
    for resp in (alice.get(f"{sets(alice)}/{segment}"), alice.delete(f"{sets(alice)}/{segment}")):
        assert resp.status_code == 404, resp.text
        assert resp.json()["error"] == "not_found"
    admin = alice.as_("service:context-service-admin")
    resp = admin.post(f"/v1/namespaces/{segment}/context-sets", {
        "id": "s", "name": "n", "collections": []})
    assert resp.status_code in (201, 404), resp.text
    if resp.status_code == 201:
        listed = admin.get(f"/v1/namespaces/{segment}/context-sets").json()["items"]
        assert [s["id"] for s in listed] == ["s"]

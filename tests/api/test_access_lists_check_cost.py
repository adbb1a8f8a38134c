"""Spec 1.7/1.8: listing a context's grants or consumers costs memory for the context, not for
every revision it ever published (the permission check decoded them all: 20,000 revisions,
about ten times the peak of 2,000)."""

from __future__ import annotations

import pytest

from context_service import bootstrap
from tests.api.conftest import Api, context_body
from tests.api.test_audit_streaming import answer_peaks
from tests.api.test_revisions_streaming import NS, fill, owner  # noqa: F401 (a fixture)


@pytest.mark.parametrize("listing", ["grants", "consumers"])
def test_a_listing_does_not_cost_every_revision(
        api: Api, owner: Api, container: bootstrap.Container,  # noqa: F811
        listing: str) -> None:
    assert owner.post("/v1/contexts", context_body(name="long")).status_code == 201
    assert owner.get(f"/v1/namespaces/{NS}/contexts/long").status_code == 200
    fill(container, 2_000)
    fill(container, 20_000, name="long")
    sizes = answer_peaks(api, [f"/v1/namespaces/{NS}/contexts/{name}/{listing}"
                               for name in ("research-memory", "long")])
    assert sizes[1] < 2.5 * sizes[0], sizes

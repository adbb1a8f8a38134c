"""Spec 1.10: a page of a context's event history costs memory for the page, not for every
revision the context ever published. The route's permission check reads the catalog entry; with
its revisions decoded, each page of ``history events --all`` (pages of 1,000) cost memory in
proportion to the whole revision history, as the revisions and audit routes' checks did."""

from __future__ import annotations

from context_service import bootstrap
from tests.api.conftest import Api, context_body
from tests.api.test_audit_streaming import answer_peaks
from tests.api.test_revisions_streaming import NS, fill, owner  # noqa: F401 (a fixture)


def test_a_history_page_does_not_cost_every_revision(
        api: Api, owner: Api, container: bootstrap.Container) -> None:  # noqa: F811
    """The peak while answering a page of the events of a context of 20,000 revisions against
    one of 2,000: a ratio, no absolute figure (both histories hold the same few events)."""
    assert owner.post("/v1/contexts", context_body(name="long")).status_code == 201
    assert owner.get(f"/v1/namespaces/{NS}/contexts/long").status_code == 200
    fill(container, 2_000)
    fill(container, 20_000, name="long")
    sizes = answer_peaks(api, [f"/v1/namespaces/{NS}/contexts/{name}/history"
                               for name in ("research-memory", "long")])
    assert sizes[1] < 2.5 * sizes[0], sizes

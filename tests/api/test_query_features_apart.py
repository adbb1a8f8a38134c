"""The query index and the features of its texts advance apart: a published index answers
``POST .../query`` while its token counts and embeddings are still being computed, and the
features follow once their runner gets to them."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import pytest

from context_service import bootstrap
from context_service.projections.passage_features.features import Feature, Text, TextFeatures
from tests.api.conftest import Api
from tests.api.test_query import hits, indexed, query

pytestmark = pytest.mark.postgres


class Gated:
    """The features model, held back until the test opens the gate."""

    def __init__(self, inner: TextFeatures) -> None:
        self.inner = inner
        self.entered = threading.Event()
        self.gate = threading.Event()

    def features(self, texts: Sequence[Text]) -> list[Feature]:
        self.entered.set()
        assert self.gate.wait(30), "the test never opened the gate"
        return self.inner.features(texts)


def test_query_route_sees_an_index_before_its_embeddings(
        api: Api, container: bootstrap.Container) -> None:
    runner = container.runners["query-features"]
    projections = [p for p, _ in runner.projections]
    gated = Gated(projections[0].features)  # type: ignore[attr-defined]
    for projection in projections:
        projection.features = gated  # type: ignore[attr-defined]
    try:
        indexed(api, "notes", [("a", "Friday release schedule"), ("b", "nothing here")])
        assert gated.entered.wait(10), "the features runner should be computing the index"
        assert [h[1:] for h in hits(query(api, {"query": "release"}))] == [("notes", "a")]
        head = container.store.head()
        assert container.runners["query-index"].position == head
        assert runner.position < head  # the features of that index are not stored yet
        with container.datastore.transaction(commit=False) as cur:
            cur.execute("SELECT count(*) AS n FROM passage_features")
            assert cur.fetchone()["n"] == 0
    finally:
        gated.gate.set()
    assert runner.wait_for(container.store.head(), timeout=30)
    with container.datastore.transaction(commit=False) as cur:
        cur.execute("SELECT count(*) AS n FROM agent_passages")
        assert cur.fetchone()["n"] == 2

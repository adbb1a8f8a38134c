"""passage_features: at each publication, the features of the texts not seen before.

Token counts and embeddings are computed here, once per distinct text, never per request; a
text republished later costs one lookup.
"""

from __future__ import annotations

from collections.abc import Sequence

from context_service.domain.stream import Recorded
from context_service.projections.passage_features.features import (
    Feature,
    Handover,
    PublishedTexts,
    TextFeatures,
)
from context_service.projections.passage_features.view import PassageFeaturesView, published


class PassageFeatures:
    name = "passage_features"
    tables: tuple[str, ...] = ("passage_features",)

    def __init__(self, features: TextFeatures) -> None:
        self.features = features
        self.computed = 0  # texts whose features this instance computed
        self.handover = Handover()  # for agent_data, applied next in the same transaction

    def apply(self, view: PassageFeaturesView, batch: Sequence[Recorded]) -> None:
        self.handover.reset()
        texts = PublishedTexts()
        for recorded in batch:
            if published(recorded) is not None:
                self.handover.put(recorded.position,
                                  texts.add_index(recorded.stream.key, view.records(recorded)))
        if not texts.hashes:
            return
        known = view.known(texts.hashes)
        new = compute(self.features, texts, known)
        self.computed += len(new)
        if new:
            view.store(new)
        self.handover.features = new


def compute(features: TextFeatures, texts: PublishedTexts,
            known: dict[bytes, bool]) -> dict[bytes, Feature]:
    """Features of the texts ``known`` lacks (a vector where one is needed and missing)."""
    embed = {h: t for h, t in texts.embedded.items() if not known.get(h, False)}
    count = {h: t for h, t in texts.counted.items() if h not in known and h not in embed}
    wanted = {**count, **embed}
    return dict(zip(wanted, features.features(list(wanted.values())), strict=True))

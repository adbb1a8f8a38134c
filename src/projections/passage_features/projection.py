"""passage_features: at each publication, the features of the texts not seen before.

Token counts and embeddings are computed here, once per distinct text, never per request; a
text republished later costs one lookup. The features of one publication are computed on a
helper thread while this one reads the next publication and stores the previous one's (the
tokenizer, numpy and the database driver release the GIL while they work).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor

from context_service.domain.stream import Recorded
from context_service.projections.passage_features.features import (
    Feature,
    Handover,
    PublishedTexts,
    Text,
    TextFeatures,
)
from context_service.projections.passage_features.view import PassageFeaturesView, published

_Pending = tuple[list[bytes], Future[list[Feature]]]


class PassageFeatures:
    name = "passage_features"
    tables: tuple[str, ...] = ("passage_features",)

    def __init__(self, features: TextFeatures) -> None:
        self.features = features
        self.computed = 0  # texts whose features this instance computed
        self.handover = Handover()  # for agent_data, applied next in the same transaction

    def apply(self, view: PassageFeaturesView, batch: Sequence[Recorded]) -> None:
        self.handover.reset()
        new: dict[bytes, Feature] = {}
        sent: dict[bytes, bool] = {}  # texts given to the helper, each with whether embedded
        pending: list[_Pending] = []

        def store_first() -> None:
            keys, future = pending.pop(0)
            computed = dict(zip(keys, future.result(), strict=True))
            view.store(computed)
            new.update(computed)

        with ThreadPoolExecutor(1, thread_name_prefix="passage-features") as helper:
            for recorded in batch:
                if published(recorded) is None:
                    continue
                texts = PublishedTexts()
                self.handover.put(recorded.position,
                                  texts.add_index(recorded.stream.key, view.records(recorded)))
                known = view.known([h for h in texts.hashes if h not in sent])
                todo = wanted(texts, {**known, **sent})
                if todo:
                    sent.update((h, t.embed) for h, t in todo.items())
                    pending.append((list(todo), helper.submit(self.features.features,
                                                              list(todo.values()))))
                if len(pending) > 1:
                    store_first()
            while pending:
                store_first()
        self.computed += len(new)
        self.handover.features = new


def wanted(texts: PublishedTexts, known: Mapping[bytes, bool]) -> dict[bytes, Text]:
    """The texts ``known`` lacks (or holds without the vector they need), by hash."""
    embed = {h: t for h, t in texts.embedded.items() if not known.get(h, False)}
    count = {h: t for h, t in texts.counted.items() if h not in known and h not in embed}
    return {**count, **embed}


def compute(features: TextFeatures, texts: PublishedTexts,
            known: Mapping[bytes, bool]) -> dict[bytes, Feature]:
    """Features of the texts ``known`` lacks (a vector where one is needed and missing)."""
    todo = wanted(texts, known)
    return dict(zip(todo, features.features(list(todo.values())), strict=True))

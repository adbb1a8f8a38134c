"""A pack over an index too large for the corpus cache reads the features its own load computed
(the load serves it without keeping it): they are not computed a second time for the same pack,
and they go when nobody holds the corpus any more."""

from __future__ import annotations

import gc
import logging

import pytest

from context_service.adapters.pack import corpus as loading
from context_service.adapters.pack.corpus import CorpusLoader, Read
from context_service.adapters.pack.hybrid_features import ModelPieces
from context_service.domain.context.events import QueryRecord
from context_service.domain.pack.model import CollectionAt

MODEL = ModelPieces()


def test_an_index_too_large_to_keep_is_computed_once_per_pack(
        monkeypatch: pytest.MonkeyPatch) -> None:
    records = [QueryRecord(id=f"r{i}", context="notes", type="knowledge", revision="r",
                           text=f"turn {i} about the boundary layer", file="f")
               for i in range(5)]
    loader = CorpusLoader(None, len, limit_bytes=1, model=MODEL)  # type: ignore[arg-type]
    monkeypatch.setattr(loader, "_load", lambda _: Read("r", records, len, [None] * 5))
    built: list[str] = []
    real = loading.HybridFeatures

    def counted(*args: object) -> object:
        built.append("built")  # not the arguments: they hold the corpus
        return real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(loading, "HybridFeatures", counted)
    at = CollectionAt(name="notes", live=True, type="knowledge", current_revision="r",
                      index_revision="r", publication=7)
    corpus = loader.corpus([at])["notes"]
    assert not loader.holds(7) and loader.oversized(7)  # served, not kept
    features = loader.hybrid(corpus)
    assert loader.hybrid(corpus) is features and len(built) == 1  # the load's own
    assert loader.lexical(corpus) is loader.lexical(corpus)
    del corpus, features
    gc.collect()
    assert len(loader._served) == 0  # nobody holds the corpus: its features went with it
    loader.corpus([at])  # the next pack loads it again
    assert len(built) == 2


def test_an_index_too_large_to_keep_is_named_once_with_the_setting(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    """An operator learns which index every pack loads again, and how to keep it."""
    records = [QueryRecord(id=f"r{i}", context="notes", type="knowledge", revision="r",
                           text=f"turn {i}") for i in range(3)]
    monkeypatch.setattr(CorpusLoader, "_load", lambda *_: Read("r", records, len, [None] * 3))
    big = CollectionAt(name="notes", live=True, type="knowledge", current_revision="r",
                       index_revision="r", publication=7)
    small = CorpusLoader(None, len, limit_bytes=1, model=MODEL)  # type: ignore[arg-type]
    with caplog.at_level(logging.WARNING, logger=loading.__name__):
        small.corpus([big])
        small.corpus([big])
    warned = [r for r in caplog.records if "CS_PACK_CACHE_MIB" in r.getMessage()]
    assert len(warned) == 1
    assert (warned[0].collection, warned[0].publication, warned[0].passages) == ("notes", 7, 3)
    caplog.clear()
    roomy = CorpusLoader(None, len, model=MODEL)  # type: ignore[arg-type]
    with caplog.at_level(logging.WARNING, logger=loading.__name__):
        roomy.corpus([big])
    assert roomy.holds(7) and not caplog.records

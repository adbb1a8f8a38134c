"""pack-engine/2's pooling (rule 6) at load: the sum it computes, and the same features whether
a record's pieces were stored at publication or are tokenized at load."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from context_service.adapters.embedding.wordllama_model import TextFeaturesModel
from context_service.adapters.pack.hybrid_features import HybridFeatures, ModelPieces, pooled_rows
from context_service.domain.context.events import QueryRecord
from context_service.domain.pack.model import CollectionCorpus
from context_service.projections.passage_features.features import embedded_parts
from tests.support.hypothesis_profiles import scaled

MODEL = ModelPieces()


@settings(max_examples=scaled(80), deadline=None)
@given(st.lists(st.lists(st.tuples(st.integers(0, 49), st.floats(0.25, 40.0, width=32)),
                         max_size=12), min_size=1, max_size=9))
def test_a_row_is_its_pieces_weighted_and_added_in_order(
        rows: list[list[tuple[int, float]]]) -> None:
    matrix = np.random.default_rng(7).standard_normal((50, 8)).astype(np.float16)
    matrix = matrix.astype(np.float32)  # float16 values, as the model's
    sizes = np.array([len(r) for r in rows], dtype=np.int64)
    pieces = np.array([p for r in rows for p, _ in r], dtype=np.int64)
    weights = np.array([w for r in rows for _, w in r], dtype=np.float32)
    got = pooled_rows(sizes, pieces, weights, matrix)
    for i, row in enumerate(rows):  # one addition after another, in float64
        want = np.zeros(8, dtype=np.float64)
        for p, w in row:
            want = want + np.float64(np.float32(w)) * matrix[p].astype(np.float64)
        assert got[i].tolist() == want.tolist()


def corpus() -> CollectionCorpus:
    texts = ("Who was appointed CFO by the board?", "The board appointed Priya as CFO.",
             "No.", "The budget report was moved to Q3.", "", "Lisbon office, 2025")
    records = [QueryRecord(id=f"t{i}", context="alpha", type="memory", revision="1", text=t,
                           title="Minutes" if i % 2 else "", file="chat.md")
               for i, t in enumerate(texts)]
    return CollectionCorpus("alpha", "1", 5, records, len)


def test_stored_pieces_give_the_features_of_tokenizing_at_load() -> None:
    c = corpus()
    published = TextFeaturesModel().features([embedded_parts(p.record) for p in c.passages])
    stored = [f.pieces for f in published]
    assert sum(s is not None for s in stored) == len(stored) - 1  # "" has no pieces

    class Untokenized(ModelPieces):  # the model, refusing to tokenize a text stored
        def token_ids(self, texts: object) -> list[list[int]]:
            assert list(texts) == [""]  # type: ignore[call-overload]
            return super().token_ids([""])

    loaded = HybridFeatures(c, Untokenized(), stored)
    tokenized = HybridFeatures(c, MODEL)
    assert np.array_equal(loaded.vectors, tokenized.vectors)
    assert loaded.piece_idf.tolist() == tokenized.piece_idf.tolist()
    assert loaded.mean.tolist() == tokenized.mean.tolist()
    some = [s if i % 2 else None for i, s in enumerate(stored)]  # a mix: the rest tokenized
    assert np.array_equal(HybridFeatures(c, MODEL, some).vectors, tokenized.vectors)

"""Rule 6b of pack-engine/2 (docs/pack-engine.md): a record's vector in its context, where its
document's neighbouring records are related. Pure rules on hand-worked examples, and the
service's vectorised form (``hybrid_features.with_context``) against them."""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from context_service.adapters.pack.hybrid_features import related_documents, with_context
from context_service.domain.pack.retrieval2.context import (
    CONTEXT_WEIGHT,
    RELATED_Z,
    in_context,
    pair_mean,
    related,
)
from context_service.domain.pack.retrieval2.neighbours import neighbours_in_order


def test_the_mean_pair_cosine_of_a_collection() -> None:
    # (1, 0), (0, 1), (1, 1) in grid steps: the pairs' cosines are 0, 1 and 1, mean 2/3;
    # from the sums alone: |(2, 2)|^2 = 8, minus the records' own 1 + 1 + 2, over 3 x 2 pairs
    assert pair_mean([2, 2], 4, 3) == Fraction(2, 3)
    assert pair_mean([5, 1], 26, 1) == 0  # one record: no pair


def test_related_neighbours_stand_out_by_two_standard_errors() -> None:
    assert RELATED_Z == 2
    # three pairs with cosines 5, 6, 7: mean 6, variance 2/3; against a baseline of 0 the gap
    # is 6 and 6^2 x 3 = 108 >= 2^2 x 2/3
    assert related(3, 18, 25 + 36 + 49, Fraction(0))
    # against a baseline of 5.5 the gap is 0.5: 0.25 x 3 = 0.75 < 8/3
    assert not related(3, 18, 110, Fraction(11, 2))
    assert not related(3, -18, 110, Fraction(0))  # below the baseline
    assert not related(1, 9, 81, Fraction(0))  # one pair is no evidence
    assert related(2, 8, 32, Fraction(0))  # equal cosines above the baseline: no spread


def test_a_vector_takes_in_its_neighbours() -> None:
    assert CONTEXT_WEIGHT == 0.3
    # (1, 0) + 0.3 x (0, 1) = (1, 0.3), over its length 1.04403: (0.95783, 0.28735), on the
    # grid 981 and 294 steps of 2^-10
    assert in_context([1.0, 0.0], [[0.0, 1.0]]) == [981 / 1024, 294 / 1024]
    # (0, 1) + 0.3 x the mean of (1, 0) and (0, -1) = (0.15, 0.85), length 0.86313:
    # (0.17378, 0.98478) -> 178 and 1008 steps
    assert in_context([0.0, 1.0], [[1.0, 0.0], [0.0, -1.0]]) == [178 / 1024, 1008 / 1024]
    assert in_context([0.5, 0.5], []) == [0.5, 0.5]


def test_only_related_documents_take_in_their_neighbours() -> None:
    # file "a": three turns whose neighbours' cosines are 0.8125 and 0.9140625; file "b":
    # three records alternating (-1, 0) and (1, 0), cosines -1 and -1. The collection's mean
    # pair cosine: (|(1.375, 1.375)|^2 - 5.953125) / 30 = -0.0724; "a" is 0.93 above it with a
    # deviation of 0.05 over two pairs (related), "b" is below it
    rows = [(1.0, 0.0), (0.8125, 0.5625), (0.5625, 0.8125),
            (-1.0, 0.0), (1.0, 0.0), (-1.0, 0.0)]
    vectors = np.array(rows, dtype=np.float32)
    documents = [0, 0, 0, 1, 1, 1]
    previous, following = neighbours_in_order(documents, [True] * 6)
    related = related_documents(vectors, np.array(following), np.array(documents), 2)
    assert related.tolist() == [True, False]
    got = with_context(vectors, np.array(previous), np.array(following), np.array(documents),
                       related)
    # row 0: (1, 0) + 0.3 x (0.8125, 0.5625) = (1.24375, 0.16875), length 1.25515:
    # (0.99092, 0.13445) -> 1015 and 138 steps
    assert got[0].tolist() == [1015 / 1024, 138 / 1024]
    assert got[1].tolist() == in_context(rows[1], [rows[0], rows[2]])
    assert got[2].tolist() == in_context(rows[2], [rows[1]])
    assert got[3:].tolist() == vectors[3:].tolist()


def test_records_without_a_tested_document_keep_their_vectors() -> None:
    # records alone (no file) and a file of two records (one pair: not tested)
    vectors = np.array([(1.0, 0.0), (0.75, 0.5), (0.5, 0.75), (0.0, 1.0)], dtype=np.float32)
    documents = [0, 1, 2, 2]
    previous, following = neighbours_in_order(documents, [False, False, True, True])
    related = related_documents(vectors, np.array(following), np.array(documents), 3)
    assert related.tolist() == [False, False, False]
    got = with_context(vectors, np.array(previous), np.array(following), np.array(documents),
                       related)
    assert got.tolist() == vectors.tolist()

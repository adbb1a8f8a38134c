"""The rules of pack-engine/2 as pure functions, each on a small example worked out by hand
(docs/pack-engine.md, "pack-engine/2"), and the document's worked example."""

from __future__ import annotations

import math

import pytest
import Stemmer

from context_service.domain.pack.retrieval2.analyzer import (
    STOP_WORDS,
    analyze,
    query_terms,
    record_analysis,
)
from context_service.domain.pack.retrieval2.bm25 import K1, B, bm25, idf
from context_service.domain.pack.retrieval2.feedback import (
    FEEDBACK_MIN_MATCHES,
    expansion,
    feedback_query,
    informative,
    selective,
)
from context_service.domain.pack.retrieval2.floor import FLOOR_DEPTH, LEXICAL_FLOOR, floor_cut
from context_service.domain.pack.retrieval2.fusion import (
    COSINE_ONLY_MARGIN,
    COSINE_UNIT,
    admitted,
    cosine_moments,
    fused,
    lexical_share,
    on_grid,
)
from context_service.domain.pack.retrieval2.informative import (
    INFORMATION_EXPONENT,
    INFORMATION_FLOOR,
    factors,
    information,
    weighed,
)
from context_service.domain.pack.retrieval2.neighbours import (
    ANSWER_WEIGHT,
    NEIGHBOUR_WEIGHT,
    QUESTION_DISCOUNT,
    SECOND_NEIGHBOUR_WEIGHT,
    asks,
    neighbours_in_order,
    with_document_prior,
    with_neighbours,
)

STEM = Stemmer.Stemmer("english").stemWords


def test_the_analyzer_drops_stop_words_and_stems() -> None:
    assert analyze("The runners were running QUICKLY", STEM) == ["runner", "run", "quick"]
    assert query_terms("When was Priya appointed? Who appointed her?", STEM) == {
        "priya": 1, "appoint": 2}
    assert len(STOP_WORDS) == 153 and {"don", "t", "the", "when"} <= STOP_WORDS


def test_a_record_weighs_title_three_keywords_two_text_one() -> None:
    weights, bag = record_analysis("Running", ["fast runs"], "We run", STEM)
    assert weights == {"run": 1 + 2 + 3, "fast": 2}
    assert bag == {"run": 3, "fast": 1}


def test_bm25_orders_by_the_formula() -> None:
    # "appoint" is in two of three records; the short record wins: |r| 2 against 4
    records = [{"appoint": 1, "cfo": 1}, {"appoint": 1, "board": 3}, {"lisbon": 1}]
    got = bm25({"appoint": 1}, records)
    weight = math.log(1 + (3 - 2 + 0.5) / (2 + 0.5))
    avgdl = (2 + 4 + 1) / 3
    short = weight * 1 * (K1 + 1) / (1 + K1 * (1 - B + B * 2 / avgdl))
    long = weight * 1 * (K1 + 1) / (1 + K1 * (1 - B + B * 4 / avgdl))
    assert got == pytest.approx([short, long, 0.0], rel=1e-15) and short > long
    # in doubles, in the one order the rules give (the service's): the same bits
    assert got == [1 * (K1 + 1) / (dl * (K1 * B / avgdl) + (1 + K1 * (1 - B))) * (1 * weight)
                   for dl in (2, 4)] + [0.0]
    assert idf(3, 2) == weight
    assert bm25({"appoint": 1}, [{}, {}]) == [0.0, 0.0]  # no record holds a term


def test_feedback_weighs_terms_by_hit_share_and_frequency() -> None:
    # two hits of equal score: "a" is half of the first and all of the second
    expanded = expansion([(2.0, {"a": 1, "b": 1}), (2.0, {"a": 2})])
    assert expanded == [("a", 0.5 * 1 / 2 + 0.5 * 2 / 2), ("b", 0.5 * 1 / 2)]
    assert feedback_query({"x": 1}, expanded) == {"x": 0.5, "a": 0.5 * 0.75, "b": 0.5 * 0.25}
    # an original term gets both halves; no hit, no expansion
    assert feedback_query({"a": 2}, [("a", 1.0)]) == {"a": 1.0}
    assert expansion([]) == []


def test_feedback_keeps_ten_terms_ties_by_term() -> None:
    bag = {f"t{i:02d}": 1 for i in range(12)}
    assert [t for t, _ in expansion([(1.0, bag)])] == [f"t{i:02d}" for i in range(10)]


def test_an_expansion_term_nearly_every_record_holds_scores_nothing() -> None:
    # 9 records in 10 is the most a new term may be held by; a query's own term always counts
    assert selective(9, 10) and not selective(10, 10)
    assert selective(90, 100) and not selective(91, 100) and selective(0, 3)
    records = [{"cfo": 1, "board": 1}] + [{"board": 1, "lisbon": 1} if i % 2 else {"board": 1}
                                          for i in range(9)]
    assert bm25({"cfo": 0.5, "board": 0.5}, records, {"board"}) == bm25({"cfo": 0.5}, records)
    assert bm25({"board": 1}, records, set()) != bm25({}, records)  # its own term: scored
    # held by 4 of 10, "lisbon" still tells records apart and is scored as a new term
    assert bm25({"cfo": 0.5, "lisbon": 0.5}, records, {"lisbon"}) == bm25(
        {"cfo": 0.5, "lisbon": 0.5}, records)
    assert bm25({"cfo": 0.5, "lisbon": 0.5}, records) != bm25({"cfo": 0.5}, records)


def test_neighbour_turns_and_the_document_prior() -> None:
    # rows 0-2 are turns of one file, row 3 a record alone; only row 1 and row 3 match
    previous, following = neighbours_in_order([0, 0, 0, 1], [True, True, True, False])
    assert (previous, following) == ([-1, 0, 1, -1], [1, 2, -1, -1])
    expanded = with_neighbours([0.0, 2.0, 0.0, 1.0], previous, following, [False] * 4)
    assert expanded == [1.0, 2.0, 1.0, 1.0]
    # best of file 0: 2.0, of record 3: 1.0
    assert with_document_prior(expanded, [0, 0, 0, 1]) == [1.6, 2.6, 1.6, 1.3]


def test_a_neighbour_lends_only_what_it_has_beyond_the_record() -> None:
    # three turns scoring 1.5, 2.0, 2.0: the first gains 0.5 x (2.0 - 1.5) = 0.25, then
    # 0.3 x (2.0 - 1.75) from the third; the other two gain nothing (a neighbour as strong adds
    # no evidence the turn lacks), so turns that all match the same words keep their own order
    previous, following = neighbours_in_order([0, 0, 0], [True] * 3)
    plain = [False] * 3
    assert with_neighbours([1.5, 2.0, 2.0], previous, following, plain) == [1.825, 2.0, 2.0]
    # the third turn: its neighbour lends nothing (0.5 x (0 - 1)), the first turn, two places
    # before it, 0.3 x (3.0 - 1.0)
    assert with_neighbours([3.0, 0.0, 1.0], previous, following, plain) == [3.0, 1.5, 1.6]


def test_a_question_is_discounted_and_lends_its_answer_in_full() -> None:
    assert (NEIGHBOUR_WEIGHT, ANSWER_WEIGHT, QUESTION_DISCOUNT) == (0.5, 1.0, 0.35)
    assert asks("Where did you go?") and not asks("We went to Lisbon.")
    previous, following = neighbours_in_order([0, 0, 0], [True] * 3)
    # row 0 asks (own 2.0 x 0.65 = 1.3) and matches; row 1 answers it: 1.0 x (2.0 - 0) = 2.0;
    # row 2 follows a statement: 0.5 x what row 1 had (0), and 0.3 x row 0's 2.0
    got = with_neighbours([2.0, 0.0, 0.0], previous, following, [True, False, False])
    assert got == [1.3, 2.0, 0.6]
    # the same without the question: row 1 takes only half, row 0 keeps its whole score
    assert with_neighbours([2.0, 0.0, 0.0], previous, following,
                           [False] * 3) == [2.0, 1.0, 0.6]


def test_the_second_neighbours_lend_beyond_the_score_so_far() -> None:
    assert SECOND_NEIGHBOUR_WEIGHT == 0.3
    previous, following = neighbours_in_order([0] * 5, [True] * 5)
    # row 1: 0.5 x 4.0 from row 0, then row 3 (two after) has 1.0, less than 2.0: nothing
    # more; row 2: 0.5 x 1.0 from row 3, then 0.3 x (4.0 - 0.5) from row 0, two before it;
    # row 4: 0.5 x 1.0 from row 3, and row 2 (two before) scored 0
    got = with_neighbours([4.0, 0.0, 0.0, 1.0, 0.0], previous, following, [False] * 5)
    assert got == [4.0, 2.0, 1.55, 1.0, 0.5]


def test_information_sums_the_idf_of_distinct_terms() -> None:
    # three records; "moon" held by one (idf ln(1 + 2.5 / 1.5)), "sky" by all three
    info = information([["moon", "sky", "moon"], ["sky"], ["sky"]])
    rare, common = idf(3, 1), idf(3, 3)
    assert info == [rare + common, common, common]


def test_a_turn_weighs_its_information_against_its_documents() -> None:
    assert INFORMATION_EXPONENT == 0.4
    info = [3.0, 1.0, 2.0, 5.0]
    # document 0 (rows 0-2, related): mean 2.0; document 1 (row 3) is a record alone
    got = factors(info, [0, 0, 0, 1], [True, True])
    assert got == [1.5 ** 0.4, 0.5 ** 0.4, 1.0, 1.0]
    # an unrelated document: every factor 1; a related one without information: 1
    assert factors(info, [0, 0, 0, 1], [False, True]) == [1.0, 1.0, 1.0, 1.0]
    assert factors([0.0, 0.0], [0, 0], [True]) == [1.0, 1.0]
    # a turn without terms of its own (information 0, mean 2.0) keeps 0.25^0.4 = 0.574, and
    # so does one at a tenth of the mean: the floor is 0.25 of the mean
    assert INFORMATION_FLOOR == 0.25
    assert factors([0.0, 0.4, 5.6], [0, 0, 0], [True]) == [0.25 ** 0.4, 0.25 ** 0.4,
                                                           2.8 ** 0.4]
    assert weighed([2.0, 2.0], [1.5 ** 0.4, 1.0]) == [2.0 * 1.5 ** 0.4, 2.0]


def test_feedback_needs_more_matches_than_the_hits_it_reads() -> None:
    # twice the 5 hits: with fewer matching records the hits would be (nearly) all of them
    assert FEEDBACK_MIN_MATCHES == 10
    assert not informative(9) and informative(10)


def test_fusion_adds_the_standardised_cosine() -> None:
    mean, deviation = cosine_moments([0, 2, 4])
    assert mean == 2 * COSINE_UNIT and deviation == math.sqrt(8 / 3) * COSINE_UNIT
    assert fused(1.0, mean, mean, deviation) == 1.0
    assert fused(0.5, 4 * COSINE_UNIT, mean, deviation) > fused(0.5, 0.0, mean, deviation)
    assert fused(0.25, 0.9, 0.0, 0.0) == 0.25  # every cosine equal: the lexical share alone
    assert lexical_share(3.0, 4.0) == 0.75 and lexical_share(0.0, 0.0) == 0.0


def test_a_record_on_its_cosine_alone_must_stand_out() -> None:
    mean, deviation = 0.0, 0.1
    assert COSINE_ONLY_MARGIN == 1.0
    # no lexical score: 0.05 above the mean (half a deviation) is not enough, 0.1 is
    assert not admitted(0.0, 0.05, mean, deviation, fused(0.0, 0.05, mean, deviation))
    assert admitted(0.0, 0.1, mean, deviation, fused(0.0, 0.1, mean, deviation))
    # any lexical score: the fused score alone decides
    assert admitted(0.2, 0.0, mean, deviation, 0.2)
    assert not admitted(0.2, -0.2, mean, deviation, fused(0.2, -0.2, mean, deviation))


def test_grid_values_multiply_and_add_exactly_in_float32() -> None:
    assert on_grid(0.1234) == 126 / 1024 and on_grid(-0.0004) == 0.0


def test_the_floor_keeps_up_to_the_last_strong_candidate() -> None:
    assert floor_cut([1.0, 0.3, 0.6, 0.2, 0.1], 0.45, depth=0) == 3
    assert floor_cut([1.0, 0.3, 0.6, 0.2, 0.1], 0.45, depth=4) == 4  # never within the depth
    assert floor_cut([1.0, 0.3, 0.6, 0.2, 0.1], 0.45) == 5  # the first 10: all of them
    assert floor_cut([1.0] + [0.1] * 11 + [0.5, 0.2]) == 13  # 0.5 at 13: the last strong one
    assert floor_cut([1.0] + [0.1] * 13) == 10
    assert floor_cut([0.0, 0.0], 0.45) == 2  # the vectors alone: no floor
    assert floor_cut([1.0, 0.1], 0.0) == 2 and floor_cut([], 0.45) == 0
    assert LEXICAL_FLOOR == 0.45 and FLOOR_DEPTH == 10


def test_the_documented_worked_example() -> None:
    """docs/pack-engine.md, "A worked example": four turns of one session (the second asks a
    question; the session is not related, rule 4b leaves it) and a note alone, given their BM25
    after feedback and their cosines with the task."""
    bm = [0.0, 3.0, 0.0, 0.0, 2.0]  # s1-1 .. s1-4 (file "session_1"), note (no file)
    previous, following = neighbours_in_order([0, 0, 0, 0, 1], [True] * 4 + [False])
    turns = with_neighbours(bm, previous, following, [False, True, False, False, False])
    assert [round(x, 12) for x in turns] == [1.5, 1.95, 3.0, 0.9, 2.0]
    assert factors([1.0, 2.0, 3.0, 4.0, 5.0], [0, 0, 0, 0, 1], [False, False]) == [1.0] * 5
    # (were session_1 related, its turns' factors would weigh their information: rule 4b's test)
    lexical = with_document_prior(turns, [0, 0, 0, 0, 1])
    assert [round(x, 12) for x in lexical] == [2.4, 2.85, 3.9, 1.8, 2.6]
    units = [0, 2, 1, 0, 1]  # cosines in 2^-20 units: mean 0.8, deviation 0.748331...
    mean, deviation = cosine_moments(units)
    assert mean == 0.8 * COSINE_UNIT and deviation == math.sqrt(0.56) * COSINE_UNIT
    scores = [fused(lexical_share(s, 3.9), u * COSINE_UNIT, mean, deviation)
              for s, u in zip(lexical, units, strict=True)]
    assert [round(s, 6) for s in scores] == [0.490663, 0.917852, 1.03118, 0.336817, 0.697847]
    order = sorted(range(5), key=lambda i: -scores[i])
    assert order == [2, 1, 4, 0, 3]  # s1-3 (the answer), s1-2 (the question), the note, ...
    shares = [lexical_share(lexical[i], 3.9) for i in order]
    assert floor_cut(shares) == 5  # within the first 10 candidates the floor cuts nothing

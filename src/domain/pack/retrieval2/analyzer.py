"""Rule 1, the retrieval analyzer: the query tokenizer, then a 179-word English stop list, then
a stemmer (Porter2 in the service, given as a function so the rules stay pure).

The ``/v1`` query route and the ``lexical`` mode keep the plain tokenizer."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence

from context_service.domain.query.scoring import KEYWORD_WEIGHT, TEXT_WEIGHT, TITLE_WEIGHT
from context_service.domain.query.tokenizer import tokenize

Stem = Callable[[list[str]], list[str]]
"""The stems of words, in order (the service's: PyStemmer's Porter2 ``english``)."""

# The common 179-word English stop list (NLTK's) as the query tokenizer leaves its words: 153
# distinct tokens ("don't" is the two tokens "don" and "t", both listed).
_STOP_LIST = """
i me my myself we our ours ourselves you your yours yourself yourselves he him his himself she
her hers herself it its itself they them their theirs themselves what which who whom this that
these those am is are was were be been being have has had having do does did doing a an the and
but if or because as until while of at by for with about against between into through during
before after above below to from up down in out on off over under again further then once here
there when where why how all any both each few more most other some such no nor not only own
same so than too very s t can will just don should now d ll m o re ve y ain aren couldn didn
doesn hadn hasn haven isn ma mightn mustn needn shan shouldn wasn weren won wouldn"""
STOP_WORDS = frozenset(_STOP_LIST.split())


def analyze(text: str, stem: Stem) -> list[str]:
    """The retrieval terms of ``text`` in order, duplicates kept."""
    return stem([t for t in tokenize(text) if t not in STOP_WORDS])


def query_terms(query: str, stem: Stem) -> dict[str, int]:
    """Each distinct term of a query, in order of first appearance, with its count."""
    return dict(Counter(analyze(query, stem)))


def record_analysis(title: str, keywords: Sequence[str], text: str,
                    stem: Stem) -> tuple[dict[str, int], dict[str, int]]:
    """A record's weighted term frequencies (rule 2: 3 per occurrence in the title, 2 in the
    keywords joined with spaces, 1 in the text, engine 1's weights) and its bag (each field
    counted once, what feedback reads: rule 3)."""
    fields = ((analyze(text, stem), TEXT_WEIGHT),
              (analyze(" ".join(keywords), stem), KEYWORD_WEIGHT),
              (analyze(title, stem), TITLE_WEIGHT))
    weights: dict[str, int] = {}
    bag: dict[str, int] = {}
    for terms, weight in fields:
        for term, count in Counter(terms).items():  # in order of first appearance
            weights[term] = weights.get(term, 0) + weight * count
            bag[term] = bag.get(term, 0) + count
    return weights, bag


def record_terms(title: str, keywords: Sequence[str], text: str, stem: Stem) -> dict[str, int]:
    return record_analysis(title, keywords, text, stem)[0]


def record_bag(title: str, keywords: Sequence[str], text: str, stem: Stem) -> dict[str, int]:
    return record_analysis(title, keywords, text, stem)[1]

"""Rule 4b, informative passages: within a conversation, a turn that carries more rare terms
than the others is more likely to hold the evidence ("Thanks, that's great!" matches a name and
holds nothing).

A record's information is the sum of ``bm25.idf`` over its distinct terms (the analyzer's, all
fields), with N and n(t) over its collection; its factor is (max(information / the mean
information of its document's records, 0.25)) ^ 0.4, 1 when that mean is 0. The floor keeps a
turn without terms of its own ("No.", "Did you?") from losing what rule 4 lent it: its factor is
0.25^0.4 = 0.574, not 0. The score after rule 4 is multiplied by the factor. Only records of
related documents (rule 6b's test: neighbouring records measurably closer than two records drawn
at random) take a factor; every other record has factor 1. Documents are not compared with each
other (BM25's length normalisation already weighs whole records), and the passages of an
unrelated document (a file of independent notes) each stand on their own.

The factors are computed once per collection, at publication, with this module's functions in
both the service and the reference: the same doubles in every process."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from context_service.domain.pack.retrieval2.bm25 import idf

INFORMATION_EXPONENT = 0.4
INFORMATION_FLOOR = 0.25  # the lowest ratio to the document's mean a factor is taken of


def information(records: Sequence[Iterable[str]]) -> list[float]:
    """Each record's information (its distinct terms' IDF summed in the order given)."""
    distinct = [list(dict.fromkeys(terms)) for terms in records]
    df: dict[str, int] = {}
    for terms in distinct:
        for t in terms:
            df[t] = df.get(t, 0) + 1
    n = len(distinct)
    weight = {t: idf(n, held) for t, held in df.items()}
    out = []
    for terms in distinct:
        total = 0.0
        for t in terms:
            total += weight[t]
        out.append(total)
    return out


def factors(info: Sequence[float], documents: Sequence[int],
            related: Sequence[bool]) -> list[float]:
    """Each record's factor: its information over its document's mean, to the exponent, in
    related documents (``related`` by document number); 1 elsewhere."""
    totals: dict[int, float] = {}
    counts: dict[int, int] = {}
    for x, d in zip(info, documents, strict=True):
        totals[d] = totals.get(d, 0.0) + x
        counts[d] = counts.get(d, 0) + 1
    out = []
    for x, d in zip(info, documents, strict=True):
        mean = totals[d] / counts[d]
        if related[d] and mean > 0:
            out.append(max(x / mean, INFORMATION_FLOOR) ** INFORMATION_EXPONENT)
        else:
            out.append(1.0)
    return out


def weighed(scores: Sequence[float], factor: Sequence[float]) -> list[float]:
    return [s * f for s, f in zip(scores, factor, strict=True)]

"""Round 10 of the retrieval lab: a sentence encoder's vectors as an upper bound, and the
relevance floor read before the document rules.

A sentence encoder is a measurement here, never a dependency: its vectors are computed outside
the project (any encoder, in any environment) from the texts this module writes, and read back
from a file. ``python -m bench.retrieval_lab_encoder --dump TEXTS.json`` writes every record of
both development collections as the corpus loader forms its embedded text (rule 6's input:
``features.embedded_text``, title and text), by collection and record id, and every question's
text; an encoder run writes ``VECTORS.npz`` with ``records`` (one unit row per record, in the
dump's order), ``queries`` (one unit row per question text, in the dump's order) and ``keys``
(a JSON string: ``{"records": [[collection, id], ...], "queries": [text, ...]}``). ``retrieval_lab
--encoder VECTORS.npz`` then measures the grids below. ``--dump TEXTS.json --sentences title``
(or ``none``) writes each record's sentences instead, one row each, by ``attributed_sentences``,
a rule that knows no collection: a record whose text opens with an attribution ("<name>: ")
gives it to each of its sentences, the others' sentences carry the record's title (or nothing);
a record's cosine is then the best of its sentences'. The grids:

- ``encoder-cosine``: the encoder's cosine in place of rule 6's, at several vector weights;
- ``encoder-third``: the encoder's cosine as a third list beside the lexical scores and rule 6
  (each cosine standardised over the request's records, as rule 7 does);
- ``encoder-rerank``: the hybrid list's first 50 / 100 re-ordered by their fused score plus the
  encoder's standardised cosine (or by the encoder alone);
- ``floor-before-rules``: the relevance floor over each candidate's share of the lexical score
  *before* rules 4-5 (the turn's own match), at several floors and depths.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import numpy.typing as npt

from bench.bench_retrieval import CRANFIELD_DEFAULT, LOCOMO_DEFAULT, load_cranfield, load_locomo
from context_service.adapters.pack import hybrid
from context_service.adapters.pack.hybrid import Part, _first_hits, bm25
from context_service.adapters.pack.hybrid_features import (
    Floats,
    stem_words,
    unit_rows,
    with_context,
)
from context_service.domain.context.events import QueryRecord
from context_service.domain.pack.model import Scored
from context_service.domain.pack.retrieval2.analyzer import query_terms
from context_service.domain.pack.retrieval2.feedback import (
    FEEDBACK_HITS,
    expansion,
    feedback_query,
    informative,
)
from context_service.domain.pack.retrieval2.fusion import COSINE_UNIT, SPREAD, moments
from context_service.domain.score import SCALE, to_micros
from context_service.projections.passage_features.features import embedded_text

ListRule = Callable[[str, Sequence[Part], list[Scored]], list[Scored]]
QueryCosines = Callable[[Sequence[int], Sequence[Part], Any, list[Floats], str], list[Floats]]


SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
# an attribution opens the text: "<name>: ", the name one to three words (as ``contextctl
# ingest`` writes a chat message, "<role>: <text>"), perhaps after a bracketed time stamp
# ("[1:56 pm on 8 May, 2023] Caroline: ...", the shape of a chat log)
ATTRIBUTION = re.compile(r"(?:\[[^\]\n]{1,80}\]\s*)?([^\W\d][\w.'-]*(?: [\w.'-]+){0,2}):\s+(.*)",
                         re.S)


def sentences(text: str) -> list[str]:
    """The text cut after ".", "!" or "?" and whitespace (whitespace collapsed, fragments of
    one character dropped)."""
    flat = re.sub(r"\s+", " ", text).strip()
    return [p for p in SENTENCE_END.split(flat) if len(p.strip()) > 1]


def attributed_sentences(title: str, text: str, others: str = "title") -> list[str]:
    """A record's sentences as encoded one by one, by a rule that knows no collection: when
    the text opens with an attribution, each sentence carries it ("Caroline: ..."), since a
    clause cut from a message loses who said it; otherwise each carries the record's title
    (``others`` "title", "<title>: ...") or nothing (``others`` "none": the title, when any, is
    then a sentence of its own, as the embedded text is cut)."""
    said = ATTRIBUTION.fullmatch(text.strip())
    if said:
        head, body = said.group(1), said.group(2)
        return [f"{head}: {p}" for p in sentences(body)] or [text]
    if others == "title" and title.strip():
        head = re.sub(r"\s+", " ", title).strip()
        return [f"{head}: {p}" for p in sentences(text)] or [f"{title}\n{text}"]
    whole = f"{title}\n{text}" if title else text
    return sentences(whole) or [whole]


def dump(path: Path, locomo: Path, cranfield: Path, others: str | None = None) -> None:
    """The texts an encoder needs: each record's embedded text (first record per id, as the
    corpus keeps it) by collection, and every question; with ``others`` ("title" / "none"),
    each record's ``attributed_sentences`` instead, one row each."""
    loaded = [load_locomo(locomo), load_cranfield(cranfield)]
    records: list[list[str]] = []
    questions: list[str] = []
    for data in loaded:
        for c in data.collections:
            seen: set[str] = set()
            for r in c.records:
                record = msgspec.convert(r, QueryRecord)
                if record.id not in seen:
                    seen.add(record.id)
                    if others is None:
                        records.append([c.name, record.id, embedded_text(record)])
                        continue
                    records.extend([c.name, record.id, t] for t in
                                   attributed_sentences(record.title, record.text, others))
        questions.extend(q.text for q in data.questions)
    path.write_text(json.dumps({"records": records, "queries": sorted(set(questions))}),
                    encoding="utf-8")


class EncoderVectors:
    """An encoder's unit vectors, by (collection, record id) and by query text. A record may
    have several rows (its sentences, encoded one by one): its cosine is then the best of
    theirs, and the centring and rule 6b options do not apply."""

    def __init__(self, path: Path) -> None:
        held = np.load(path, allow_pickle=False)
        keys = json.loads(str(held["keys"]))
        self.records = held["records"].astype(np.float32)
        self.queries = held["queries"].astype(np.float32)
        self.rows: dict[tuple[str, str], list[int]] = {}
        for i, (c, r) in enumerate(keys["records"]):
            self.rows.setdefault((c, r), []).append(i)
        self.several = any(len(at) > 1 for at in self.rows.values())
        self.row = {key: at[0] for key, at in self.rows.items()}
        self.query_row = {q: i for i, q in enumerate(keys["queries"])}
        self._by_part: dict[tuple[int, bool, bool], tuple[Floats, Floats]] = {}
        self._groups: dict[int, tuple[Floats, npt.NDArray[np.intp]]] = {}

    def best_of_rows(self, query: str, part: Part) -> Floats:
        """Each record's best cosine over its rows, in the features' row order."""
        key = id(part.features)
        if key not in self._groups:
            f = part.features
            at = [self.rows[f.collection, r] for r in f.record_ids]
            starts = np.cumsum([0] + [len(a) for a in at[:-1]]).astype(np.intp)
            flat = [i for a in at for i in a]
            self._groups[key] = (self.records[flat].astype(np.float64), starts)
        rows, starts = self._groups[key]
        q = self.queries[self.query_row[query]].astype(np.float64)
        best: Floats = np.maximum.reduceat(rows @ q, starts) if len(starts) else np.zeros(0)
        return best

    def part_rows(self, part: Part, centred: bool = False,
                  context: bool = False) -> tuple[Floats, Floats]:
        """The collection's record vectors in its features' row order (centred on their mean
        and unit length; with rule 6b's neighbours where the service finds the document
        related), and the mean subtracted (zero when not centred)."""
        key = (id(part.features), centred, context)
        if key not in self._by_part:
            f = part.features
            rows = self.records[[self.row[f.collection, r] for r in f.record_ids]]
            rows = rows.astype(np.float64)
            mean = rows.mean(axis=0) if centred and len(rows) else np.zeros(rows.shape[1])
            rows = unit_rows(rows - mean)
            if context:
                rows = with_context(rows.astype(np.float32), f.previous, f.following,
                                    f.documents, f.related).astype(np.float64)
            self._by_part[key] = (rows, mean)
        return self._by_part[key]

    def cosines(self, query: str, parts: Sequence[Part], centred: bool = False,
                context: bool = False) -> list[Floats]:
        if self.several:
            return [self.best_of_rows(query, p) for p in parts]
        q = self.queries[self.query_row[query]].astype(np.float64)
        out = []
        for p in parts:
            rows, mean = self.part_rows(p, centred, context)
            v = unit_rows((q - mean)[None, :])[0]
            out.append(rows @ v)
        return out


ENCODER: list[EncoderVectors] = []  # set by ``retrieval_lab --encoder``


def encoder() -> EncoderVectors:
    if not ENCODER:
        raise SystemExit("the encoder grids need --encoder VECTORS.npz")
    return ENCODER[0]


def standardised(cos: list[Floats]) -> list[Floats]:
    """Cosines as rule 7 reads them: (c - mean) / deviation over every record of the request
    (moments of the values in ``COSINE_UNIT``s, as the service computes them)."""
    units = [np.rint(c / COSINE_UNIT).astype(np.int64) for c in cos]
    mean, deviation = moments(sum(len(u) for u in units), sum(int(u.sum()) for u in units),
                              sum(int(np.dot(u, u)) for u in units))
    if deviation <= 0:
        return [np.zeros(len(c)) for c in cos]
    return [(c - mean) / deviation for c in cos]


@dataclass(frozen=True)
class EncoderCosine:
    """Rule 6's cosine replaced by the encoder's: the record's unit vector, optionally centred
    on the collection's mean record (as rule 6 centres) and with its neighbours taken in where
    the service finds the document related (rule 6b)."""

    centred: bool = False
    context: bool = False

    def rule(self) -> QueryCosines:
        def cosines(_ids: Sequence[int], parts: Sequence[Part], _matrix: object,
                    _lexical: list[Floats], query: str) -> list[Floats]:
            return encoder().cosines(query, parts, self.centred, self.context)
        return cosines


class ThirdList:
    """Rule 7 with a third term: share + (w6 z6 + wE zE) / 3, z6 rule 6's cosine and zE the
    encoder's, each standardised over the request's records as rule 7 does. The service's
    fusion reads it as one cosine side (the sum) with the sum's deviation as the weight, so
    its admission rule reads the sum too."""

    def __init__(self, w6: float = 0.35, we: float = 0.35) -> None:
        self.w6, self.we = w6, we
        self._deviation = 0.0

    def cosines(self, ids: Sequence[int], parts: Sequence[Part], matrix: object,
                _lexical: list[Floats], query: str) -> list[Floats]:
        mine = standardised(hybrid.cosines(ids, parts, matrix))  # type: ignore[arg-type]
        theirs = standardised(encoder().cosines(query, parts))
        both = [self.w6 * a + self.we * b for a, b in zip(mine, theirs, strict=True)]
        units = [np.rint(c / COSINE_UNIT).astype(np.int64) for c in both]
        self._deviation = moments(sum(len(u) for u in units), sum(int(u.sum()) for u in units),
                                  sum(int(np.dot(u, u)) for u in units))[1]
        return both

    def weigh(self, _query: str, _parts: Sequence[Part]) -> float:
        """The weight that undoes the fusion's division by the sum's deviation (read after
        ``cosines`` for the same query)."""
        return self._deviation


@dataclass(frozen=True)
class Rerank:
    """The hybrid list's first ``depth`` re-ordered by fused score + ``lam`` x the encoder's
    standardised cosine / 3 (``lam`` None: by the encoder's cosine alone); the rest stays."""

    depth: int = 50
    lam: float | None = 0.35

    def rule(self) -> ListRule:
        def rerank(query: str, parts: Sequence[Part], found: list[Scored]) -> list[Scored]:
            if not found:
                return found
            z = standardised(encoder().cosines(query, parts))
            at = {(p.features.collection, r): (k, i) for k, p in enumerate(parts)
                  for i, r in enumerate(p.features.record_ids)}
            head, tail = found[:self.depth], found[self.depth:]

            def key(s: Scored) -> float:
                k, i = at[s.collection, s.record_id]
                if self.lam is None:
                    return float(z[k][i])
                return s.score + self.lam * float(z[k][i]) / SPREAD
            ordered = sorted(head, key=lambda s: (-key(s), s.collection, s.record_id))
            # scores rewritten to keep the list's order (descending); shares kept
            top = head[0].score
            out = [s._replace(score=to_micros(top - n * 1e-6) / SCALE)
                   for n, s in enumerate(ordered)]
            return out + tail
        return rerank


def pre_rule_lexical(query: str, parts: Sequence[Part]) -> list[Floats]:
    """Rules 1-3 (BM25 and feedback) without rules 4-5: each record's own match."""
    terms = query_terms(query, stem_words)
    first = bm25(dict(terms), parts)
    matched = sum(int(np.count_nonzero(s > 0)) for s in first)
    hits = _first_hits(first, parts, FEEDBACK_HITS) if informative(matched) else []
    if not hits:
        return first
    bags = [(score, parts[at].features.bag(row)) for score, at, row in hits]
    weighted = feedback_query(terms, expansion(bags))
    return bm25(weighted, parts, weighted.keys() - terms.keys())


@dataclass(frozen=True)
class FloorBeforeRules:
    """The relevance floor's share read before rules 4-5: each candidate's share is its own
    BM25-after-feedback score over the request's maximum of that score (``mix`` "own"), or the
    larger of that and the served share (``mix`` "max"), so a record lifted by its neighbours
    or its document does not by itself extend the pack's tail (the floor's constants are the
    variant's ``floor``)."""

    mix: str = "own"

    def rule(self) -> ListRule:
        def shares(query: str, parts: Sequence[Part], found: list[Scored]) -> list[Scored]:
            own = pre_rule_lexical(query, parts)
            top = max((float(s.max()) for s in own if len(s)), default=0.0)
            at = {(p.features.collection, r): (k, i) for k, p in enumerate(parts)
                  for i, r in enumerate(p.features.record_ids)}
            out = []
            for s in found:
                k, i = at[s.collection, s.record_id]
                share = float(own[k][i]) / top if top > 0 else 0.0
                if self.mix == "max":
                    share = max(share, s.lexical)
                out.append(s._replace(lexical=to_micros(share) / SCALE))
            return out
        return shares


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dump", type=Path, required=True, metavar="TEXTS.json")
    parser.add_argument("--locomo", type=Path, default=LOCOMO_DEFAULT)
    parser.add_argument("--cranfield", type=Path, default=CRANFIELD_DEFAULT)
    parser.add_argument("--sentences", choices=("title", "none"), default=None,
                        help="write each record's sentences by the attribution rule, the "
                             "unattributed records' carrying their title or nothing")
    args = parser.parse_args()
    dump(args.dump, args.locomo, args.cranfield, args.sentences)
    return 0


if __name__ == "__main__":
    sys.exit(main())


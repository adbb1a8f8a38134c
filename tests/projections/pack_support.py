"""Helpers of the pack-corpus tests: collections with indexes written through the write model,
and a plain-Python BM25 of agent-context-api 7.5 to check the vectorised one against."""

from __future__ import annotations

import math
import random
from collections import Counter
from datetime import UTC, datetime

from context_service.adapters.eventstore.application import ContextApplication
from context_service.bootstrap import Container
from context_service.domain.context import commands as c
from context_service.domain.context.events import QueryRecord, SourceRef
from context_service.domain.events import ADMIN
from context_service.domain.pack.model import Corpus
from context_service.domain.query.tokenizer import tokenize
from context_service.domain.score import to_micros

WHEN = datetime(2026, 1, 1, tzinfo=UTC)
WORDS = ("revenue", "cfo", "appointed", "board", "march", "quarter", "Straße", "东京", "plan",
         "budget", "growth", "risk", "audit", "the", "of", "and", "report")


def digest(rng: random.Random) -> str:
    return f"{rng.getrandbits(256):064x}"


def collection(app: ContextApplication, name: str, revision: str, ns: str = "ns",
               sources: tuple[SourceRef, ...] = ()) -> None:
    app.execute(ns, name, c.CreateContext(actor=ADMIN, name=name, namespace=ns, type="memory",
                                          backend="pvc", size="1Gi",
                                          access_mode="ReadWriteOnce"))
    app.execute(ns, name, c.PublishRevision(actor=ADMIN, id=revision, created_at=WHEN,
                                            operation="sync", sources=sources))


def publish(app: ContextApplication, name: str, revision: str,
            records: tuple[QueryRecord, ...], ns: str = "ns") -> int:
    return app.execute(ns, name, c.PublishQueryIndex(actor=ADMIN, revision=revision,
                                                     records=records)).position


def random_records(rng: random.Random, name: str, revision: str,
                   count: int) -> tuple[QueryRecord, ...]:
    def words(n: int) -> str:
        return " ".join(rng.choice(WORDS) for _ in range(n))

    return tuple(
        QueryRecord(id=f"r{rng.randrange(count * 2)}", context=name, type="memory",
                    revision=revision, text=words(rng.randint(1, 20)),
                    title=words(rng.randrange(3)),
                    keywords=tuple(words(1) for _ in range(rng.randrange(3))),
                    file=rng.choice(("", "a.md", "b.md", "#c.md")))
        for _ in range(count))


def formula_bm25(query: str, corpus: Corpus,
                   eligible: frozenset[str] | None) -> list[tuple[str, str, int]]:
    """(collection, record id, score in millionths) per spec, straight from the formula."""
    tfs = {}
    for name, one in corpus.items():
        for p in one.passages:
            tf: Counter[str] = Counter(tokenize(p.record.text))
            for t in tokenize(" ".join(p.record.keywords)):
                tf[t] += 2
            for t in tokenize(p.record.title):
                tf[t] += 3
            tfs[(name, p.record.id)] = (tf, one.document_of[p.record.id])
    n_records = len(tfs)
    if not n_records:
        return []
    avgdl = sum(sum(tf.values()) for tf, _ in tfs.values()) / n_records
    terms = Counter(tokenize(query))
    out = []
    for key, (tf, doc) in tfs.items():
        if eligible is not None and doc not in eligible:
            continue
        score = 0.0
        for t, qtf in terms.items():
            n = sum(1 for other, _ in tfs.values() if other[t] > 0)
            idf = math.log(1 + (n_records - n + 0.5) / (n + 0.5))
            f = tf[t]
            dl = sum(tf.values())
            score += qtf * idf * f * (1.2 + 1) / (f + 1.2 * (1 - 0.75 + 0.75 * dl / avgdl))
        if score > 0:
            out.append((key[0], key[1], to_micros(score)))
    out.sort(key=lambda x: (-x[2], x[0], x[1]))
    return out[:200]


def caught_up(container: Container) -> None:
    head = container.store.head()
    for runner in container.runners.values():
        assert runner.wait_for(head, timeout=30)


def generated_corpus(container: Container, seed: int,
                     records: int = 60) -> tuple[int, list[str]]:
    """Four collections c0..c3 of ``records`` random records each in namespace ``ns``, every
    view caught up; the head and the names."""
    rng = random.Random(seed)
    names = [f"c{i}" for i in range(4)]
    for name in names:
        rev = digest(rng)
        collection(container.contexts, name, rev)
        publish(container.contexts, name, rev, random_records(rng, name, rev, records))
    caught_up(container)
    return container.store.head(), names

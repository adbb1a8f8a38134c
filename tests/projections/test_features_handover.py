"""Features at publication, over real PostgreSQL, on a generated corpus: every stored count and
vector equals the definition (the tokenizer's own ids; the float64 mean of their rows added one
by one), and agent_data built from what passage_features hands over equals agent_data rebuilt
alone from the features table."""

from __future__ import annotations

import random

import numpy as np
import pytest

from context_service.adapters.embedding.wordllama_model import load
from context_service.bootstrap import Container
from context_service.domain.context.events import QueryRecord
from context_service.domain.pack.model import document_id, document_text
from context_service.projections.passage_features.features import (
    embedded_text,
    first_per_id,
    text_hash,
)
from tests.projections.pack_support import collection, publish
from tests.support.views import snapshot

pytestmark = pytest.mark.postgres

_AGENT_DATA = ("agent_collections", "agent_passages", "agent_documents",
               "agent_data.collections", "agent_data.passages", "agent_data.documents")


def _records(rng: random.Random, name: str, rev: str, shared: list[str],
             ) -> tuple[QueryRecord, ...]:
    words = ["".join(rng.choices("abcdefghiklmnoprstuvyéß", k=rng.randint(1, 9)))
             for _ in range(400)]

    def text() -> str:
        if rng.random() < 0.2:
            return rng.choice(shared)  # republished across contexts
        return ". ".join(" ".join(rng.choices(words, k=rng.randint(1, 30))).capitalize()
                         for _ in range(rng.randint(1, 6)))

    return tuple(QueryRecord(
        id=f"r{rng.randrange(40)}", context=name, type="memory", revision=rev, text=text(),
        title=" ".join(rng.choices(words, k=rng.randint(1, 4))).title()
        if rng.random() < 0.7 else "",
        file=rng.choice(["a.md", "b.md", ""])) for _ in range(50))


def _definition(text: str) -> tuple[int, bytes | None]:
    model = load()
    ids = model.full_token_ids([text])[0]
    if not ids:
        return 0, None
    total = np.zeros(256, dtype=np.float64)
    for row in model._matrix[ids]:
        total += row
    mean = total / len(ids)
    return len(ids), (mean / np.linalg.norm(mean)).astype(np.float32).astype(">f4").tobytes()


def test_features_equal_the_definition_and_agent_data_equals_its_rebuild(
        idle_container: Container) -> None:
    container = idle_container
    rng = random.Random(5)
    shared = [f"Shared text {i}, the same in every context." for i in range(5)]
    published: dict[str, tuple[QueryRecord, ...]] = {}
    for i in range(4):
        name, rev = f"gen{i}", f"{i}" * 64
        collection(container.contexts, name, rev)
        published[name] = _records(rng, name, rev, shared)
        publish(container.contexts, name, rev, published[name])
    for runner in container.runners.values():
        runner.catch_up()
    handed = snapshot(container)
    expected: dict[bytes, tuple[int, bytes | None]] = {}
    for name, records in published.items():
        for record in records:
            expected.setdefault(text_hash(record.text), (_definition(record.text)[0], None))
        for record in records:
            expected[text_hash(embedded_text(record))] = _definition(embedded_text(record))
        docs: dict[str, list[str]] = {}
        for _, record in first_per_id(records):
            docs.setdefault(document_id(name, record), []).append(record.text)
        for texts in docs.values():
            doc = document_text(texts)
            expected.setdefault(text_hash(doc), (_definition(doc)[0], None))
    with container.datastore.transaction(commit=False) as cur:
        cur.execute("SELECT hash, tokens, embedding FROM passage_features", binary=True)
        stored = {bytes(r["hash"]): (r["tokens"], None if r["embedding"] is None
                                     else bytes(r["embedding"])[4:]) for r in cur.fetchall()}
    assert stored == expected
    rebuilt = container.runner_for(["agent_data"])  # no passage_features: reads the table
    rebuilt.rebuild()
    alone = snapshot(container)
    assert handed["agent_passages"] and handed["agent_data.documents"]
    assert {t: alone[t] for t in _AGENT_DATA} == {t: handed[t] for t in _AGENT_DATA}

"""A LoCoMo file holding several conversations: each sample is a document of its own. Packs lift
a passage's neighbours in the same document (the records sharing its ``file``, agent-context-api
§5.2), and with the whole file one document the last turn of one conversation was the
neighbour of the first turn of the next, lending it the score of a chat it is no part of.
None needs a service: the records are what a dry run would publish."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from context_service.contextctl.ingestion import ingest
from context_service.domain.pack.retrieval2.neighbours import NONE, neighbours_in_order


def turn(speaker: str, text: str, dia_id: str) -> dict[str, str]:
    return {"speaker": speaker, "text": text, "dia_id": dia_id}


def sample(sample_id: str | None, *turns: dict[str, str]) -> dict[str, Any]:
    made: dict[str, Any] = {"qa": [], "conversation": {
        "speaker_a": "Ana", "speaker_b": "Ben", "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": list(turns)}}
    if sample_id is not None:
        made["sample_id"] = sample_id
    return made


FIRST = sample("conv-1", turn("Ana", "I adopted a greyhound named Comet.", "D1:1"),
               turn("Ben", "Lovely! Send a picture.", "D1:2"))
SECOND = sample("conv-2", turn("Cleo", "We are moving to Lisbon.", "D1:1"),
                turn("Dan", "When do you leave?", "D1:2"))


def records(tmp_path: Path, samples: Any, name: str = "locomo.json") -> list[dict[str, Any]]:
    (tmp_path / name).write_text(json.dumps(samples))
    # the revision follows the file's bytes; everything else is the passage's
    return [{k: v for k, v in r.items() if k != "revision"}
            for r in ingest([tmp_path], context="kb", dry_run=True).records]


def test_each_sample_of_a_file_is_a_document_of_its_own(tmp_path: Path) -> None:
    got = records(tmp_path, [FIRST, SECOND])
    assert [(r["id"], r["file"]) for r in got] == [
        ("locomo.json#conv-1/d1-1:1", "locomo.json#conv-1"),
        ("locomo.json#conv-1/d1-2:1", "locomo.json#conv-1"),
        ("locomo.json#conv-2/d1-1:1", "locomo.json#conv-2"),
        ("locomo.json#conv-2/d1-2:1", "locomo.json#conv-2")]
    # the last turn of one conversation and the first of the next are in different documents
    assert got[1]["file"] != got[2]["file"]


def test_no_turn_lends_its_score_to_another_conversations_turn(tmp_path: Path) -> None:
    """Rule 4 of the pack engine, over the records as published: a turn's neighbours are the
    records of its document in publication order."""
    got = records(tmp_path, [FIRST, SECOND])
    documents = {file: number for number, file in enumerate(dict.fromkeys(
        r["file"] for r in got))}
    previous, following = neighbours_in_order([documents[r["file"]] for r in got],
                                              [True] * len(got))
    assert (previous, following) == ([NONE, 0, NONE, 2], [1, NONE, 3, NONE])


def test_a_file_of_one_sample_keeps_its_file_and_ids(tmp_path: Path) -> None:
    """A single conversation is the whole file: its document and ids are what they were."""
    got = records(tmp_path, FIRST)
    assert [(r["id"], r["file"]) for r in got] == [
        ("locomo.json#conv-1/d1-1:1", "locomo.json"), ("locomo.json#conv-1/d1-2:1", "locomo.json")]
    assert records(tmp_path, [FIRST]) == got


def test_samples_with_the_same_id_are_still_two_documents(tmp_path: Path) -> None:
    """Two samples whose ids are one slug (a copied sample, ``conv 1`` beside ``conv-1``) are
    told apart as a heading's anchors are (``-1``); their record ids stay as they were."""
    again = sample("conv 1", turn("Eve", "Hello.", "D1:1"))
    got = records(tmp_path, [FIRST, FIRST, again])
    assert [r["file"] for r in got] == ["locomo.json#conv-1"] * 2 + ["locomo.json#conv-1-1"] * 2 + [
        "locomo.json#conv-1-2"]
    assert len({r["id"] for r in got}) == len(got)
    assert [r["id"] for r in got][:3] == [
        "locomo.json#conv-1/d1-1:1", "locomo.json#conv-1/d1-2:1", "locomo.json#conv-1/d1-1:2"]


def test_a_sample_without_an_id_is_named_by_its_place(tmp_path: Path) -> None:
    got = records(tmp_path, [FIRST, sample(None, turn("Eve", "Hello.", "D1:1"))])
    assert [(r["id"], r["file"]) for r in got][2:] == [
        ("locomo.json#conversation-2/d1-1:1", "locomo.json#conversation-2")]


def test_documents_are_named_the_same_at_each_ingest(tmp_path: Path) -> None:
    """The document of a sample is named by its id, not its place: a data set whose samples
    are reordered keeps each conversation's file and ids."""
    before = records(tmp_path, [FIRST, SECOND])
    after = records(tmp_path, [SECOND, FIRST])
    assert sorted(before, key=lambda r: r["id"]) == sorted(after, key=lambda r: r["id"])

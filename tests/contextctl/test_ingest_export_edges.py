"""Chat exports at the edges of what a file can hold: a conversations.json whose conversations
share one id (an export spliced together, or made to hurt) is read in time linear in them.

Each conversation is a document of its own, named by its id made unique in the file as a
heading's anchor is (``same``, ``same-1``, ``same-2``, ...). Each new name tried every number
from 1 up: 20,000 conversations took 18 s, 100,000 some eight minutes, of one core, before the
first passage was published.
"""

from __future__ import annotations

import json
import time

from context_service.contextctl.ingestion.blocks import Anchors
from context_service.contextctl.ingestion.chat import parse_json

N = 20_000


def _export(ids: list[str]) -> str:
    return json.dumps([{"uuid": i, "name": "t", "chat_messages": [
        {"sender": "human", "text": f"hello {n}", "created_at": "2024-01-01T00:00:00Z"}]}
        for n, i in enumerate(ids)])


def test_conversations_sharing_one_id_are_read_in_linear_time() -> None:
    text = _export(["same"] * N)
    started = time.perf_counter()
    document = parse_json(text, "conversations.json")
    took = time.perf_counter() - started
    parts = [b.part for b in document.blocks]
    assert parts[:3] == ["same", "same-1", "same-2"] and parts[-1] == f"same-{N - 1}"
    assert len(set(parts)) == N
    assert took < 6, f"{N} conversations of one id took {took:.1f} s"


def test_anchors_keep_their_names_when_a_number_is_taken_first() -> None:
    anchors = Anchors()
    names = [anchors.new(h) for h in ("x-1", "x", "x", "x", "x-2", "x-3", "x")]
    assert names == ["x-1", "x", "x-2", "x-3", "x-2-1", "x-3-1", "x-4"]

"""Chat transcripts whose messages carry a ``conversation`` object of their own.

The day's change reads a JSON list as LoCoMo samples when *any* item holds a ``conversation``
object (before: when every item did), so that one broken sample is an error rather than a file
a folder leaves out. A message is no LoCoMo sample, though: a transcript whose first message
carries its chat's metadata (``"conversation": {"id": ..., "title": ...}``, as exports write)
was read as the transcript it is before the change, and was refused after it as
``sample 2 has no conversation``.
"""

from __future__ import annotations

import json

import pytest

from context_service.contextctl.ingestion import chat
from context_service.contextctl.ingestion.decoding import Unreadable

MESSAGES = [
    {"role": "user", "content": "Where do we meet?", "time": "2024-05-01T10:00:00Z",
     "conversation": {"id": "c-17", "title": "Trip"}},
    {"role": "assistant", "content": "At the station.", "time": "2024-05-01T10:00:05Z"},
]


@pytest.mark.parametrize("shape", ["list", "messages"])
def test_a_message_with_conversation_metadata_is_read_as_a_message(shape: str) -> None:
    data = MESSAGES if shape == "list" else {"messages": MESSAGES}
    document = chat.parse_json(json.dumps(data), "c.json")
    assert [(b.anchor, b.text, b.valid_from) for b in document.blocks] == [
        ("m1", "user: Where do we meet?", "2024-05-01T10:00:00Z"),
        ("m2", "assistant: At the station.", "2024-05-01T10:00:05Z")]


def test_a_locomo_file_with_one_broken_sample_is_still_an_error() -> None:
    sample = {"sample_id": "s1", "conversation": {"session_1": [
        {"speaker": "Ana", "text": "Hello.", "dia_id": "D1:1"}]}}
    with pytest.raises(Unreadable, match=r"^sample 2 has no conversation$"):
        chat.parse_json(json.dumps([sample, {"sample_id": "s2"}]), "l.json")

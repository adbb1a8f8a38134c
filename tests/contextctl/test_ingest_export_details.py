"""Two details of the chat exports a reader meets: which tool a ChatGPT tool message came from
(its ``author.name``: ``python``, ``browser``), and times written as numbers inside strings
(``"1700000000.5"``), which refused the whole file. None needs a service: the records are what
a dry run would publish."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from context_service.contextctl.ingestion import chat, ingest
from context_service.contextctl.ingestion.decoding import Unreadable
from context_service.contextctl.ingestion.times import time_of

FIXTURES = Path(__file__).parent / "fixtures_chat_exports"


def texts(path: Path) -> list[str]:
    return [r["text"] for r in ingest([path], context="kb", dry_run=True).records]


def chatgpt(path: Path, *messages: dict[str, Any]) -> Path:
    """One ChatGPT conversation whose path is ``messages`` in order, under a root node."""
    mapping: dict[str, Any] = {"root": {"id": "root", "parent": None, "children": ["n1"],
                                        "message": None}}
    for number, message in enumerate(messages, 1):
        mapping[f"n{number}"] = {
            "id": f"n{number}", "parent": "root" if number == 1 else f"n{number - 1}",
            "children": [f"n{number + 1}"] if number < len(messages) else [],
            "message": {"id": f"n{number}", **message}}
    path.write_text(json.dumps([{"id": "conv", "title": "Tools", "create_time": 1700000000,
                                 "current_node": f"n{len(messages)}", "mapping": mapping}]))
    return path


def said(role: str, text: str, name: str | None = None, when: Any = 1700000000) -> dict[str, Any]:
    return {"author": {"role": role, "name": name, "metadata": {}}, "create_time": when,
            "content": {"content_type": "text", "parts": [text]}}


# --- which tool -----------------------------------------------------------------------------


def test_a_tool_message_names_its_tool() -> None:
    """The fixture's tool message comes from ``python``; it read ``tool: …`` alone."""
    assert "tool (python): sofa_hours = 18" in texts(FIXTURES / "chatgpt" / "conversations.json")


def test_each_tool_is_named_and_a_tool_without_a_name_reads_as_before(tmp_path: Path) -> None:
    export = chatgpt(tmp_path / "conversations.json",
                     said("user", "Look it up."),
                     said("tool", "3 results", name="browser"),
                     said("tool", "done", name=None),
                     said("tool", "ok", name="  "),
                     said("tool", "x = 1", name="python"),
                     said("assistant", "Found it.", name="ChatGPT"))
    assert texts(export) == ["user: Look it up.", "tool (browser): 3 results", "tool: done",
                             "tool: ok", "tool (python): x = 1", "assistant: Found it."]


# --- times written as numbers in strings ----------------------------------------------------


@pytest.mark.parametrize(("written", "read_as"), [
    ("1700000000.5", "2023-11-14T22:13:20.500000Z"),
    ("1700000000", "2023-11-14T22:13:20Z"),
    (" 1700000000 ", "2023-11-14T22:13:20Z"),
    ("1683553000123", "2023-05-08T13:36:40.123000Z"),  # milliseconds, as the number would be
    ("-1", "1969-12-31T23:59:59Z"),
    ("0", "1970-01-01T00:00:00Z"),
    ("1.7e9", "2023-11-14T22:13:20Z"),
])
def test_a_number_in_a_string_is_read_as_the_number(written: str, read_as: str) -> None:
    assert time_of(written, "message 1") == read_as
    assert time_of(json.loads(written.strip()), "message 1") == read_as


def test_a_string_iso_8601_reads_keeps_its_meaning() -> None:
    """``20230508`` is ISO 8601's basic form of 8 May 2023, and was read so: not second
    20,230,508 of the epoch."""
    assert time_of("20230508", "message 1") == "2023-05-08T00:00:00Z"


@pytest.mark.parametrize("written", [
    "1700000000 s", "0x10", "1_700_000_000", "NaN", "Infinity", "+1700000000", "1700000000.",
    ".5", "01700000000", "\u0661\u0667" + "\u0660" * 8, "1e400"])
def test_what_is_not_a_number_as_json_writes_it_is_still_refused(written: str) -> None:
    with pytest.raises(Unreadable, match=r"^message 1: time .* is not a date and time$"):
        time_of(written, "message 1")


def test_an_export_and_a_transcript_with_such_times_are_read(tmp_path: Path) -> None:
    export = chatgpt(tmp_path / "conversations.json",
                     said("user", "Hello.", when="1700000000.5"),
                     said("assistant", "Hi.", when="1700000030"))
    got = ingest([export], context="kb", dry_run=True).records
    assert [r.get("validFrom") for r in got] == ["2023-11-14T22:13:20.500000Z",
                                                 "2023-11-14T22:13:50Z"]
    text = json.dumps([{"role": "user", "content": "Hello.", "time": "1683553000123"}])
    assert [b.valid_from for b in chat.parse_json(text, "c.json").blocks] == [
        "2023-05-08T13:36:40.123000Z"]

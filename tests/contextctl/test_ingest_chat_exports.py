"""The chat transcripts people actually have: ChatGPT's and Claude.ai's data exports
(``conversations.json``), messages wrapped in ``{"data": {"messages": [...]}}``, and times
written with a lower-case ``z`` or in epoch milliseconds. All of them were left out of a folder
as "not a transcript", or refused. The fixtures are small hand-written files in the exports'
shapes. None needs a service: the records are what a dry run would publish."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from context_service.contextctl.ingestion import chat, ingest
from context_service.contextctl.ingestion.decoding import Unreadable
from context_service.contextctl.ingestion.discovery import discover
from context_service.contextctl.ingestion.reading import read
from context_service.contextctl.ingestion.tokens import counter

FIXTURES = Path(__file__).parent / "fixtures_chat_exports"
CHATGPT = FIXTURES / "chatgpt" / "conversations.json"
CLAUDE = FIXTURES / "claude" / "conversations.json"
GREYHOUND = "c0ffee00-0000-4000-8000-000000000001"
LISBON = "c0ffee00-0000-4000-8000-000000000002"
GARDEN = "0b5e0000-0000-4000-8000-00000000000a"
BASIL = "0b5e0000-0000-4000-8000-00000000000b"


def dry(*paths: Path) -> list[dict[str, Any]]:
    """The records, without the revision (which follows the files' bytes)."""
    return [{k: v for k, v in r.items() if k not in ("revision", "context", "type")}
            for r in ingest(list(paths), context="kb", dry_run=True).records]


def passage(file: str, part: str, number: int, title: str, text: str,
            when: str | None) -> dict[str, Any]:
    made = {"id": f"{file}#{part}/m{number}:1", "title": title, "text": text,
            "file": f"{file}#{part}"}
    if when:
        made["validFrom"] = when
    return made


# --- ChatGPT --------------------------------------------------------------------------------


def test_a_chatgpt_export_gives_one_document_per_conversation_along_its_current_path() -> None:
    """The visible conversation is the path from ``current_node`` up to the root: the reply
    regenerated away (``a1-old``) is not read; a hidden, empty system message gives no passage
    but keeps its place in the numbering; a tool's output names its tool; an
    image part reads ``[image]`` where it stands in its message's text."""
    got = dry(CHATGPT)
    name = "conversations.json"
    assert got == [
        passage(name, GREYHOUND, 2, "Naming a greyhound",
                "user: What should I name my greyhound?", "2023-05-08T13:36:40.500000Z"),
        passage(name, GREYHOUND, 3, "Naming a greyhound", "assistant: How about Comet?",
                "2023-05-08T13:37:00Z"),
        passage(name, GREYHOUND, 4, "Naming a greyhound",
                "user: [image]\n\nComet it is. This is him on the sofa.", "2023-05-08T13:38:20Z"),
        passage(name, GREYHOUND, 5, "Naming a greyhound", "tool (python): sofa_hours = 18",
                "2023-05-08T13:39:10Z"),
        passage(name, GREYHOUND, 6, "Naming a greyhound",
                "assistant: He looks happy.\n\nGreyhounds sleep a lot.", "2023-05-08T13:40:00Z"),
        passage(name, LISBON, 1, "Trip to Lisbon", "user: Where should we eat in Lisbon?",
                "2023-06-05T21:20:00Z"),
        passage(name, LISBON, 2, "Trip to Lisbon", "assistant: Try the custard tarts in Belem.",
                "2023-06-05T21:20:30Z")]
    assert not any("Rocket" in r["text"] for r in got)


def test_an_export_in_a_folder_is_read_not_ignored(tmp_path: Path) -> None:
    """A folder holding an export left it out as "not a transcript", without a word."""
    shutil.copytree(FIXTURES, tmp_path / "exports")
    got = read(discover([tmp_path]), counter(), 256)
    assert (got.failed, got.ignored) == ([], [])
    assert sorted(e.name for e in got.entries) == [
        "exports/chatgpt/conversations.json", "exports/claude/conversations.json"]
    assert {p.file for p in got.passages} == {
        f"exports/chatgpt/conversations.json#{GREYHOUND}",
        f"exports/chatgpt/conversations.json#{LISBON}",
        f"exports/claude/conversations.json#{GARDEN}",
        f"exports/claude/conversations.json#{BASIL}"}


def test_a_grown_export_keeps_each_conversations_records(tmp_path: Path) -> None:
    """A conversation is named by its id, not its place: the next export, with a new
    conversation first, gives the same records for the others."""
    conversations = json.loads(CHATGPT.read_text())
    (tmp_path / "conversations.json").write_text(json.dumps(conversations))
    before = dry(tmp_path)
    newer = json.loads(json.dumps(conversations[1]))
    newer.update(id="c0ffee00-0000-4000-8000-000000000003", title="Newer")
    (tmp_path / "conversations.json").write_text(json.dumps([newer, *conversations]))
    after = dry(tmp_path)
    assert after[2:] == before
    assert [r["title"] for r in after[:2]] == ["Newer", "Newer"]


def test_an_export_of_one_conversation_is_one_document_named_by_the_file(tmp_path: Path) -> None:
    (tmp_path / "chat.json").write_text(json.dumps(json.loads(CHATGPT.read_text())[1]))
    got = dry(tmp_path)
    assert [(r["id"], r["file"]) for r in got] == [
        (f"chat.json#{LISBON}/m1:1", "chat.json"), (f"chat.json#{LISBON}/m2:1", "chat.json")]


def chatgpt(**changes: Any) -> dict[str, Any]:
    conversation: dict[str, Any] = json.loads(json.dumps(json.loads(CHATGPT.read_text())[1]))
    conversation.update(changes)
    return conversation


def broken_mapping(node: str, **changes: Any) -> dict[str, Any]:
    conversation = chatgpt()
    conversation["mapping"][node].update(changes)
    return conversation


@pytest.mark.parametrize(("conversations", "reason"), [
    ([chatgpt(), {"title": "no mapping"}], "conversation 2 has no mapping of messages"),
    ([chatgpt(current_node=None)], "conversation 1 has no current_node in its mapping"),
    ([chatgpt(current_node="gone")], "conversation 1 has no current_node in its mapping"),
    ([broken_mapping("b1", parent="gone")], "conversation 1: node 'gone' is not in its mapping"),
    ([broken_mapping("b0", parent="b2")], "conversation 1: its messages' parents form a loop"),
    ([broken_mapping("b2", message={"author": {}, "content": {"parts": ["x"]}})],
     "conversation 1 message 2 has no author role"),
    ([broken_mapping("b2", message={"author": {"role": "user"}, "content": {"parts": ["x"]},
                                    "create_time": "yesterday"})],
     "conversation 1 message 2: time 'yesterday' is not a date and time"),
])
def test_a_broken_chatgpt_conversation_refuses_the_file(conversations: list[dict[str, Any]],
                                                        reason: str) -> None:
    with pytest.raises(Unreadable) as refused:
        chat.parse_json(json.dumps(conversations), "conversations.json")
    assert str(refused.value) == reason


# --- Claude.ai ------------------------------------------------------------------------------


def test_a_claude_export_gives_one_document_per_conversation() -> None:
    """A message's text is its ``content`` blocks of text (a tool's call is not text, and
    ``text`` then holds a placeholder); without ``content``, its ``text``. A conversation
    without a name is titled by the file, as a transcript is."""
    got = dry(CLAUDE)
    name = "conversations.json"
    assert got == [
        passage(name, GARDEN, 1, "Garden plan", "human: Which tomatoes grow on a balcony?",
                "2024-03-01T09:00:00Z"),
        passage(name, GARDEN, 2, "Garden plan",
                "assistant: Cherry tomatoes do well in pots.\n\nWater them daily in summer.",
                "2024-03-01T09:00:20Z"),
        passage(name, BASIL, 1, name, "human: Remind me: the basil goes by the window.",
                "2024-03-02T10:00:00Z")]


ROOT = "00000000-0000-4000-8000-000000000000"  # the parent Claude.ai gives a first message


def claude_message(uuid: str, parent: str, sender: str, text: str) -> dict[str, Any]:
    return {"uuid": uuid, "parent_message_uuid": parent, "sender": sender, "text": text,
            "content": [{"type": "text", "text": text}], "created_at": "2024-03-03T08:00:00Z"}


BRANCHED = [claude_message("q1", ROOT, "human", "What soil for basil?"),
            claude_message("a1", "q1", "assistant", "Any potting mix."),
            claude_message("q2-old", "a1", "human", "And for mint?"),
            claude_message("a2-old", "q2-old", "assistant", "Mint grows anywhere."),
            claude_message("q2", "a1", "human", "And for rosemary?"),
            claude_message("a2", "q2", "assistant", "Sandy soil.")]


@pytest.mark.parametrize(("leaf", "texts"), [
    (None, ["human: What soil for basil?", "assistant: Any potting mix.",
            "human: And for rosemary?", "assistant: Sandy soil."]),
    ("a2-old", ["human: What soil for basil?", "assistant: Any potting mix.",
                "human: And for mint?", "assistant: Mint grows anywhere."]),
])
def test_a_claude_conversation_edited_is_read_along_one_branch(leaf: str | None,
                                                               texts: list[str]) -> None:
    """Claude.ai's messages name their parent: a prompt edited starts a branch, and the
    messages of every branch stand in one list in the order written. The branch read ends at
    ``current_leaf_message_uuid``, else at the last message written."""
    conversation: dict[str, Any] = {"uuid": "g", "name": "Herbs", "chat_messages": BRANCHED}
    if leaf:
        conversation["current_leaf_message_uuid"] = leaf
    doc = chat.parse_json(json.dumps(conversation), "conversations.json")
    assert [b.text for b in doc.blocks] == texts
    assert [b.anchor for b in doc.blocks] == ["g/m1", "g/m2", "g/m3", "g/m4"]


@pytest.mark.parametrize(("conversations", "reason"), [
    ([{"uuid": "a", "chat_messages": [claude_message("x", "y", "human", "hi"),
                                      claude_message("y", "x", "assistant", "yo")]}],
     "conversation 1: its messages' parents form a loop"),
    ([{"uuid": "a", "chat_messages": []}, {"uuid": "b"}],
     "conversation 2 has no chat_messages"),
    ([{"uuid": "a", "chat_messages": [{"text": "hi"}]}],
     "conversation 1 message 1 has no sender"),
])
def test_a_broken_claude_conversation_refuses_the_file(conversations: list[dict[str, Any]],
                                                       reason: str) -> None:
    with pytest.raises(Unreadable) as refused:
        chat.parse_json(json.dumps(conversations), "conversations.json")
    assert str(refused.value) == reason


# --- other wrappers and times ---------------------------------------------------------------


def test_messages_under_data_are_read_as_messages(tmp_path: Path) -> None:
    messages = [{"role": "user", "content": "Hello."}, {"role": "bot", "content": "Hi."}]
    (tmp_path / "a.json").write_text(json.dumps({"data": {"messages": messages}}))
    (tmp_path / "b.json").write_text(json.dumps({"messages": messages}))
    got = dry(tmp_path)
    assert [(r["id"], r["text"]) for r in got] == [
        ("a.json#m1:1", "user: Hello."), ("a.json#m2:1", "bot: Hi."),
        ("b.json#m1:1", "user: Hello."), ("b.json#m2:1", "bot: Hi.")]


@pytest.mark.parametrize(("written", "read_as"), [
    ("2023-05-08T13:56:00z", "2023-05-08T13:56:00Z"),
    ("2023-05-08t13:56:00.250z", "2023-05-08T13:56:00.250000Z"),
    (1683553000123, "2023-05-08T13:36:40.123000Z"),
    (1683553000, "2023-05-08T13:36:40Z"),  # seconds stay seconds
    (1683553000.5, "2023-05-08T13:36:40.500000Z"),
    (-1, "1969-12-31T23:59:59Z"),
])
def test_times_people_write_are_read(written: Any, read_as: str) -> None:
    """RFC 3339 allows a lower-case ``z``; JavaScript writes epoch milliseconds. Both refused
    the file."""
    text = json.dumps([{"role": "user", "content": "Hello.", "time": written}])
    assert [b.valid_from for b in chat.parse_json(text, "c.json").blocks] == [read_as]

"""What a chat export holds beyond plain text, and what the reader silently did not read.

ChatGPT writes a message's ``content`` in many shapes (``content_type``): a quote from a page
or a file (``tether_quote``: ``title``, ``url``, ``text``), a page the browser tool opened
(``tether_browsing_display``: ``result``), a message mixing text with images and voice
(``multimodal_text``: parts that are strings, image pointers, audio transcriptions), the model's
reasoning (``thoughts``, ``reasoning_recap``). Its hidden messages (custom instructions, marked
``is_visually_hidden_from_conversation``) are not part of the conversation the app shows. An
empty conversation (no nodes) refused the whole export. Claude.ai's message that names a parent
missing from the export ended the branch there: every message before it was lost, without a
word. What is not read is now counted and said in the report's notes. None needs a service: the
records are what a dry run would publish."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from context_service.contextctl.ingest import print_report
from context_service.contextctl.ingestion import ingest
from context_service.contextctl.ingestion.api import parameters
from context_service.contextctl.ingestion.decoding import Unreadable
from context_service.contextctl.ingestion.discovery import discover
from context_service.contextctl.ingestion.reading import read as read_files
from context_service.contextctl.ingestion.tokens import counter

NIL = "00000000-0000-4000-8000-000000000000"  # the parent Claude.ai gives a first message
WHEN = 1700000000


def node_message(role: str, content: Any, name: str | None = None,
                 hidden: bool = False) -> dict[str, Any]:
    message: dict[str, Any] = {"author": {"role": role, "name": name, "metadata": {}},
                               "create_time": WHEN, "content": content}
    if hidden:
        message["metadata"] = {"is_visually_hidden_from_conversation": True}
    return message


def text(role: str, *parts: Any, name: str | None = None, hidden: bool = False,
         kind: str = "text") -> dict[str, Any]:
    return node_message(role, {"content_type": kind, "parts": list(parts)}, name, hidden)


def conversation(ident: str, *messages: dict[str, Any] | None) -> dict[str, Any]:
    """One ChatGPT conversation whose current path is ``messages`` in order, under a root node
    without a message (``None`` is a node whose message is ``null``)."""
    mapping: dict[str, Any] = {"root": {"id": "root", "parent": None, "children": ["n1"],
                                        "message": None}}
    for number, message in enumerate(messages, 1):
        mapping[f"n{number}"] = {
            "id": f"n{number}", "parent": "root" if number == 1 else f"n{number - 1}",
            "children": [f"n{number + 1}"] if number < len(messages) else [],
            "message": None if message is None else {"id": f"n{number}", **message}}
    return {"id": ident, "title": ident.title(), "create_time": WHEN,
            "current_node": f"n{len(messages)}" if messages else "root", "mapping": mapping}


def read(tmp_path: Path, *conversations: dict[str, Any]) -> tuple[list[str], list[str]]:
    """The texts a dry run would publish and the report's notes on the export."""
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps(list(conversations)))
    report = ingest([path], context="kb", dry_run=True)
    notes = report.as_json()["notes"]
    assert all(n["file"] == "conversations.json" for n in notes)
    return [r["text"] for r in report.records], [n["note"] for n in notes]


def texts(tmp_path: Path, *messages: dict[str, Any] | None) -> list[str]:
    return read(tmp_path, conversation("c", *messages))[0]


# --- ChatGPT: content that is not text parts -------------------------------------------------


def test_code_its_output_and_a_quoted_page_read_as_the_app_shows_them(tmp_path: Path) -> None:
    """The code the model ran (``code``), its output (``execution_output``) and a page the
    browser quoted (``tether_quote``, whose title and address were left out) are read; a page
    the browser opened (``tether_browsing_display``, its ``result``) was dropped."""
    got = texts(
        tmp_path,
        text("user", "How long do greyhounds sleep?"),
        node_message("assistant", {"content_type": "code", "language": "python",
                                   "text": "print(18 * 60)"}),
        node_message("tool", {"content_type": "execution_output", "text": "1080"}, "python"),
        node_message("tool", {"content_type": "tether_browsing_display",
                              "result": "# Greyhound care\nThey sleep 18 hours.",
                              "summary": None, "assets": None}, "browser"),
        node_message("tool", {"content_type": "tether_quote", "url": "https://dogs.example/gh",
                              "domain": "dogs.example", "title": "Greyhound care",
                              "text": "Greyhounds sleep up to 18 hours a day."}, "browser"),
        text("assistant", "About 18 hours."))
    assert got == [
        "user: How long do greyhounds sleep?", "assistant: print(18 * 60)",
        "tool (python): 1080", "tool (browser): # Greyhound care\nThey sleep 18 hours.",
        "tool (browser): Greyhound care\nhttps://dogs.example/gh\n\n"
        "Greyhounds sleep up to 18 hours a day.",
        "assistant: About 18 hours."]


def test_a_multimodal_message_keeps_its_strings_an_image_and_its_voice(tmp_path: Path) -> None:
    """An image part reads ``[image]`` where it stands; a voice message is its transcription
    (the recording itself is not text, and is counted); other objects are counted."""
    image = {"content_type": "image_asset_pointer", "asset_pointer": "file-service://file-1",
             "width": 640, "height": 480}
    heard = {"content_type": "audio_transcription", "text": "Is he asleep again?",
             "direction": "in"}
    audio = {"content_type": "audio_asset_pointer", "asset_pointer": "sediment://file-2",
             "format": "wav"}
    got, notes = read(tmp_path, conversation(
        "c",
        text("user", image, "This is Comet on the sofa.", kind="multimodal_text"),
        text("user", heard, audio, kind="multimodal_text"),
        text("assistant", {"content_type": "audio_transcription", "text": " Yes. "}, 7,
             {"content_type": "widget"}, None, kind="multimodal_text"),
        text("assistant", image, kind="multimodal_text")))
    assert got == ["user: [image]\n\nThis is Comet on the sofa.", "user: Is he asleep again?",
                   "assistant: Yes.", "assistant: [image]"]
    assert notes == ["left out 3 parts that are not text (1 audio_asset_pointer, 1 number, "
                     "1 widget)"]


def test_reasoning_is_left_out_and_counted(tmp_path: Path) -> None:
    """The model's reasoning is its working, not what either side said (as Claude.ai's
    ``thinking`` blocks): the reply carries its conclusion. It is not read, and the report
    says how much was left out."""
    got, notes = read(tmp_path, conversation(
        "c",
        text("user", "Name my greyhound."),
        node_message("assistant", {"content_type": "thoughts", "thoughts": [
            {"summary": "Naming", "content": "Fast dogs, so a fast name.", "finished": True}],
            "source_analysis_msg_id": "x"}),
        node_message("assistant", {"content_type": "reasoning_recap",
                                   "content": "Thought for 4 seconds"}),
        text("assistant", "Comet.")))
    assert got == ["user: Name my greyhound.", "assistant: Comet."]
    assert notes == ["left out 2 parts that are not text (1 reasoning_recap, 1 thoughts)"]


def test_only_string_fields_are_read_and_the_others_counted(tmp_path: Path) -> None:
    got, notes = read(tmp_path, conversation(
        "c",
        node_message("tool", {"content_type": "tether_quote", "url": 5, "title": {"a": 1},
                              "text": "Quoted."}, "browser"),
        node_message("tool", {"content_type": "tether_browsing_display", "result": ["x"]},
                     "browser"),
        node_message("assistant", {"content_type": "model_editable_context",
                                   "model_set_context": "1. likes dogs"}),
        node_message("assistant", {"content_type": "code", "text": None}),
        text("user", "Thanks.")))
    assert got == ["tool (browser): Quoted.", "user: Thanks."]
    assert notes == ["left out 4 parts that are not text (1 model_editable_context, "
                     "1 tether_browsing_display.result, 1 tether_quote.title, "
                     "1 tether_quote.url)"]


# --- ChatGPT: hidden messages, empty conversations, null messages -----------------------------


def test_hidden_messages_are_not_read_but_keep_their_numbers(tmp_path: Path) -> None:
    """Custom instructions come as hidden messages in every conversation the user has: read,
    each conversation began with the same passage. Hidden, as the app hides them, they give no
    passage, and the messages after them keep their ids."""
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps([conversation(
        "c",
        text("system", "", hidden=True),
        node_message("user", {"content_type": "user_editable_context",
                              "user_profile": "I live in Lisbon.",
                              "user_instructions": "Be brief."}, hidden=True),
        text("system", "The user lives in Lisbon. Be brief.", hidden=True),
        text("user", "Hello."),
        node_message("user", {"content_type": "text", "parts": ["Shown."]}),
    )]))
    report = ingest([path], context="kb", dry_run=True)
    assert [(r["id"], r["text"]) for r in report.records] == [
        ("conversations.json#c/m4:1", "user: Hello."),
        ("conversations.json#c/m5:1", "user: Shown.")]
    assert report.as_json()["notes"] == []


def test_an_empty_conversation_or_one_only_hidden_reads_the_others(tmp_path: Path) -> None:
    """A conversation without nodes (``mapping`` empty, no ``current_node``) refused the whole
    export; one of hidden messages only gave nothing without a word."""
    empty = {"id": "empty", "title": "New chat", "create_time": WHEN, "current_node": None,
             "mapping": {}}
    got, notes = read(tmp_path, conversation("a", text("user", "Hello.")), empty,
                      conversation("hidden", text("system", "Be brief.", hidden=True)),
                      conversation("b", None, text("user", "Bye.")))
    assert got == ["user: Hello.", "user: Bye."]
    assert notes == ["2 conversations gave no passage (no message with text): "
                     "conversation 2, conversation 3"]


def test_many_empty_conversations_are_named_five_at_most(tmp_path: Path) -> None:
    """Claude.ai keeps every chat opened and left: the note counts them all, names five."""
    empty = [{"uuid": f"e{n}", "name": "", "chat_messages": []} for n in range(7)]
    said = {"uuid": "s", "name": "x", "chat_messages": [claude("q", None, "human", "Hi.")]}
    got, notes = read(tmp_path, said, *empty)
    assert got == ["human: Hi."]
    assert notes == ["7 conversations gave no passage (no message with text): conversation 2, "
                     "conversation 3, conversation 4, conversation 5, conversation 6, …"]


def test_an_export_of_empty_conversations_only_has_no_text(tmp_path: Path) -> None:
    empty = {"id": "empty", "title": "", "current_node": None, "mapping": {}}
    with pytest.raises(Unreadable) as refused:
        ingest_one(tmp_path, [empty, conversation("hidden", text("system", "x", hidden=True))])
    assert str(refused.value) == "no text to index"


def ingest_one(tmp_path: Path, conversations: list[dict[str, Any]]) -> None:
    """Reads one file as the command does, raising its reason."""
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps(conversations))
    got = read_files(discover([path]), counter(), 256)
    if got.failed:
        raise Unreadable(got.failed[0].reason)


# --- Claude.ai ------------------------------------------------------------------------------


def claude(uuid: str, parent: str | None, sender: str, said: str,
           *blocks: dict[str, Any]) -> dict[str, Any]:
    message: dict[str, Any] = {"uuid": uuid, "sender": sender, "text": said,
                               "content": [{"type": "text", "text": said}, *blocks],
                               "created_at": "2024-03-03T08:00:00Z"}
    if parent is not None:
        message["parent_message_uuid"] = parent
    return message


def test_a_claude_message_whose_parent_is_missing_continues_the_conversation(
        tmp_path: Path) -> None:
    """``a2``'s parent is not in the export (a message lost from it): the branch ended there
    and the two messages before it were not read, without a word. It is read after the message
    written before it, as messages without parents are, and the report says so."""
    messages = [claude("q1", NIL, "human", "What soil for basil?"),
                claude("a1", "q1", "assistant", "Any potting mix."),
                claude("q2", "lost", "human", "And for rosemary?"),
                claude("a2", "q2", "assistant", "Sandy soil.")]
    got, notes = read(tmp_path, {"uuid": "g", "name": "Herbs", "chat_messages": messages})
    assert got == ["human: What soil for basil?", "assistant: Any potting mix.",
                   "human: And for rosemary?", "assistant: Sandy soil."]
    assert notes == ["conversation 1 message 3 names a parent that is not in the export "
                     "('lost'): read after the message written before it"]


def test_a_claude_first_message_with_a_missing_parent_is_the_first(tmp_path: Path) -> None:
    """The nil parent of a first message is no gap; another missing parent of the first message
    written is one, said so, and the message read as the first."""
    messages = [claude("q1", "lost", "human", "Hello."), claude("a1", "q1", "assistant", "Hi.")]
    other = [claude("q1", NIL, "human", "Bye."), claude("a1", "q1", "assistant", "Bye.")]
    got, notes = read(tmp_path, {"uuid": "g", "name": "a", "chat_messages": messages},
                      {"uuid": "h", "name": "b", "chat_messages": other})
    assert got == ["human: Hello.", "assistant: Hi.", "human: Bye.", "assistant: Bye."]
    assert notes == ["conversation 1 message 1 names a parent that is not in the export "
                     "('lost'): read as the first message"]


def test_a_guess_after_a_missing_parent_never_makes_a_loop(tmp_path: Path) -> None:
    """The message written before ``a`` is its child (written first, as a spliced export may
    hold): read after ``a``'s missing parent, it would come back to ``a``. That guess is not
    taken (``a`` is read as the first) rather than refuse the file as parents that loop."""
    messages = [claude("b", "a", "assistant", "Child."), claude("a", "lost", "human", "Orphan.")]
    got, notes = read(tmp_path, {"uuid": "g", "name": "x", "chat_messages": messages,
                                 "current_leaf_message_uuid": "a"},
                      {"uuid": "h", "name": "y", "chat_messages": [
                          claude("q", NIL, "human", "Q."),
                          claude("r", "gone", "assistant", "R."),
                          claude("s", "r", "human", "S."),
                          claude("t", "q", "assistant", "T.")]})
    assert got == ["human: Orphan.", "human: Q.", "assistant: T."]
    assert notes == ["conversation 1 message 1 names a parent that is not in the export "
                     "('lost'): read as the first message"]


def test_a_claude_edit_of_the_first_prompt_is_a_branch_not_a_gap(tmp_path: Path) -> None:
    messages = [claude("q1", NIL, "human", "Old question."),
                claude("a1", "q1", "assistant", "Old answer."),
                claude("q1b", NIL, "human", "New question."),
                claude("a1b", "q1b", "assistant", "New answer.")]
    got, notes = read(tmp_path, {"uuid": "g", "name": "x", "chat_messages": messages},
                      {"uuid": "h", "name": "y", "chat_messages": []})
    assert got == ["human: New question.", "assistant: New answer."]
    assert notes == ["1 conversation gave no passage (no message with text): conversation 2"]


def test_a_claude_current_leaf_missing_from_the_export_is_said(tmp_path: Path) -> None:
    """The branch the app showed is unknown: the last message written ends the one read, as
    when the export names no leaf, and the report says so."""
    messages = [claude("q1", NIL, "human", "Old question."),
                claude("q1b", NIL, "human", "New question.")]
    got, notes = read(tmp_path, {"uuid": "g", "name": "x", "chat_messages": messages,
                                 "current_leaf_message_uuid": "gone"})
    assert got == ["human: New question."]
    assert notes == ["conversation 1: its current leaf message is not in the export ('gone'): "
                     "read the branch ending at the last message written"]


def test_claude_blocks_that_are_not_text_are_counted(tmp_path: Path) -> None:
    """Thinking, a tool's call and its result are not text (``thinking`` is the model's
    working, as ChatGPT's ``thoughts``); nor are attachments and files: all counted."""
    message = claude("a1", None, "assistant", "Here is the plan.",
                     {"type": "thinking", "thinking": "They want a plan."},
                     {"type": "tool_use", "name": "artifacts", "input": {"content": "plan"}},
                     {"type": "tool_result", "content": []})
    asked = claude("q1", None, "human", "Plan my garden.")
    asked["attachments"] = [{"file_name": "beds.txt", "extracted_content": "3 beds"}]
    asked["files"] = [{"file_name": "photo.jpg"}]
    got, notes = read(tmp_path, {"uuid": "g", "name": "x", "chat_messages": [asked, message]})
    assert got == ["human: Plan my garden.", "assistant: Here is the plan."]
    assert notes == ["left out 5 parts that are not text (1 attachment, 1 file, 1 thinking, "
                     "1 tool_result, 1 tool_use)"]


def test_a_claude_message_of_tool_blocks_only_is_no_passage_of_placeholder_text(
        tmp_path: Path) -> None:
    """A reply that only called a tool (or only thought) has content blocks and none of them
    text; its ``text`` is then the app's placeholder for blocks it cannot show, not anything
    either side said. It gives no passage; the blocks are counted."""
    working: dict[str, Any] = {
        "uuid": "a1", "sender": "assistant", "created_at": "2024-03-03T08:00:00Z",
        "text": "\n\nThis block is not supported on your current device yet.\n\n",
        "content": [{"type": "tool_use", "name": "web_search", "input": {"query": "beds"}},
                    {"type": "tool_result", "content": []}]}
    got, notes = read(tmp_path, {"uuid": "g", "name": "x", "chat_messages": [
        claude("q1", None, "human", "Plan my garden."), working,
        claude("a2", None, "assistant", "Three beds.")]})
    assert got == ["human: Plan my garden.", "assistant: Three beds."]
    assert notes == ["left out 2 parts that are not text (1 tool_result, 1 tool_use)"]


# --- the export's folder -------------------------------------------------------------------

APP_PAGE = """<!DOCTYPE html><html><head><meta charset="UTF-8"><title>ChatGPT Data Export</title>
<style>body { font-family: sans-serif; }</style></head>
<body><div id="root"></div>
<script>var jsonData = [{"title": "Naming a greyhound", "mapping": {}}];</script>
</body></html>"""


def test_an_unzipped_chatgpt_export_folder_is_read(tmp_path: Path) -> None:
    """ChatGPT's export holds ``chat.html`` beside ``conversations.json``: a page its script
    draws from the same conversations, with no text of its own. In a folder it refused the
    whole run (``no text to index``); it is left out as the export's other JSON files are.
    Named, it is still an error, with its reason."""
    folder = tmp_path / "export"
    folder.mkdir()
    (folder / "chat.html").write_text(APP_PAGE)
    (folder / "user.json").write_text(json.dumps({"id": "user-1", "email": "a@example.com"}))
    (folder / "conversations.json").write_text(json.dumps([conversation(
        "c", text("user", "Hello."))]))
    report = ingest([folder], context="kb", dry_run=True)
    assert [r["text"] for r in report.records] == ["user: Hello."]
    assert report.ignored == ["chat.html", "user.json"]
    got = read_files(discover([folder / "chat.html"]), counter(), 256)
    assert [(s.file, s.reason) for s in got.failed] == [
        ("chat.html", "a page its scripts draw, without text of its own")]
    (folder / "empty.html").write_text("<html><body><h1>Only a heading</h1></body></html>")
    got = read_files(discover([folder]), counter(), 256)
    assert [(s.file, s.reason) for s in got.failed] == [("empty.html", "no text to index")]


def test_the_command_says_each_note_on_standard_error(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """The text report's notes: a line each on standard error, after the summary."""
    messages = [claude("q1", NIL, "human", "Hello.", {"type": "thinking", "thinking": "hm"}),
                claude("a1", "gone", "assistant", "Hi.")]
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps([{"uuid": "g", "name": "x", "chat_messages": messages},
                                {"uuid": "h", "name": "y", "chat_messages": []}]))
    print_report(ingest([path], context="kb", dry_run=True))
    err = capsys.readouterr().err.splitlines()
    assert err[-3:] == [
        "conversations.json: left out 1 part that is not text (1 thinking)",
        "conversations.json: conversation 1 message 2 names a parent that is not in the "
        "export ('gone'): read after the message written before it",
        "conversations.json: 1 conversation gave no passage (no message with text): "
        "conversation 2"]


# --- the chunker's version --------------------------------------------------------------------


def test_the_chunker_version_names_the_new_rules() -> None:
    """What an export yields changed: a context ingested under ``/5`` is published again."""
    assert parameters(256)["chunker"] == "contextctl-ingest/6"

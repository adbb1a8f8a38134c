"""The data exports of chat apps, ``conversations.json``: a list of conversations (or one), each a
document of its own, one block per message, ``<role>: <text>`` with its time as ``validFrom``
(a ChatGPT tool's message ``tool (<its name>): <text>``).

- ChatGPT: a conversation's ``mapping`` is a tree of nodes (``parent``, ``children``,
  ``message``): a message edited or a reply regenerated starts a branch. What the app shows is
  the path from ``current_node`` up to the root, and only that path is read.
- Claude.ai: a conversation's ``chat_messages``; where they name their parent, an edited prompt
  starts a branch too, and one branch is read (``_claude_branch``).

A conversation is named by its id (``id``, ``uuid``), not its place: the next export, grown by
new conversations, keeps the others' documents and ids. Its title (``title``, ``name``) titles
its passages. A message's text is read by ``export_content``; what is not read (parts that are
not text, conversations that gave no passage) and a message read after another because its
parent is missing are the document's notes, which the report shows."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from context_service.contextctl.ingestion.blocks import Anchors, Block, Document
from context_service.contextctl.ingestion.decoding import Unreadable, with_newlines
from context_service.contextctl.ingestion.export_content import NotRead, chatgpt_text, claude_text
from context_service.contextctl.ingestion.meter import Done
from context_service.contextctl.ingestion.times import time_of

# (role, text, time) of each message of a conversation in order; ``where`` names the
# conversation in a file's reasons, and what is not read is told to ``NotRead``
Messages = Callable[[dict[str, Any], str, NotRead], Iterator[tuple[str, str, Any]]]
# the parent Claude.ai gives a message that has none: the first, or an edit of the first
_NO_PARENT = "00000000-0000-4000-8000-000000000000"


def is_chatgpt(value: Any) -> bool:
    return isinstance(value, dict) and isinstance(value.get("mapping"), dict)


def is_claude(value: Any) -> bool:
    return isinstance(value, dict) and isinstance(value.get("chat_messages"), list)


def reader_of(data: Any) -> Callable[[str, Done], Document] | None:
    """How to read ``data`` when it is an export (one conversation of it is enough: one broken
    conversation makes the file an error, not "not a transcript"), else ``None``."""
    conversations = data if isinstance(data, list) else [data]
    if any(is_chatgpt(c) for c in conversations):
        return lambda name, done: _read(conversations, name, done, is_chatgpt,
                                        "has no mapping of messages", _chatgpt)
    if any(is_claude(c) for c in conversations):
        return lambda name, done: _read(conversations, name, done, is_claude,
                                        "has no chat_messages", _claude)
    return None


def _read(conversations: list[Any], name: str, done: Done, shaped: Callable[[Any], bool],
          missing: str, messages: Messages) -> Document:
    for number, conversation in enumerate(conversations, 1):
        if not shaped(conversation):
            raise Unreadable(f"conversation {number} {missing}")
    document = Document(name)
    parts = Anchors()  # the conversations' names, unique in the file
    not_read = NotRead()
    for number, conversation in enumerate(conversations, 1):
        where = f"conversation {number}"
        part = parts.new(_text_field(conversation, "id", "conversation_id", "uuid")
                         or f"conversation-{number}")
        title = _text_field(conversation, "title", "name").strip()
        gave = False
        for position, (role, text, when) in enumerate(messages(conversation, where, not_read),
                                                      1):
            # read even when the message is empty: a time that is no time refuses the file
            valid_from = time_of(when, f"{where} message {position}")
            said = with_newlines(text).strip()
            if said:
                document.blocks.append(Block(
                    (title,) if title else (), f"{part}/m{position}", f"{role}: {said}",
                    valid_from=valid_from, alone=True,
                    part=part if len(conversations) > 1 else ""))
                gave = True
        if not gave:
            not_read.empty.append(where)
        done(number, len(conversations))
    document.notes = not_read.notes()
    return document


def _text_field(value: dict[str, Any], *keys: str) -> str:
    """The first of ``keys`` holding text, else empty."""
    return next((value[k] for k in keys if isinstance(value.get(k), str) and value[k]), "")


def _chatgpt(conversation: dict[str, Any], where: str,
             not_read: NotRead) -> Iterator[tuple[str, str, Any]]:
    """A hidden message (the system's, the user's custom instructions, in every conversation
    they have) is not part of the conversation the app shows: it gives no text, but keeps its
    number, so the ids of the messages after it are those they had."""
    for position, message in enumerate(_current_path(conversation, where), 1):
        author = message.get("author")
        if not isinstance(author, dict) or not isinstance(author.get("role"), str):
            raise Unreadable(f"{where} message {position} has no author role")
        text = "" if _hidden(message) else chatgpt_text(message.get("content"), not_read.parts)
        yield _speaker(author), text, message.get("create_time")


def _hidden(message: dict[str, Any]) -> bool:
    metadata = message.get("metadata")
    return isinstance(metadata, dict) and metadata.get(
        "is_visually_hidden_from_conversation") is True


def _speaker(author: dict[str, Any]) -> str:
    """``tool (python)``: a tool's message names the tool (``author.name``: ``python``,
    ``browser``), since "tool" alone does not say whether a passage is code's output or a web
    page. Other roles stay as they are: their ``name``, when set, is no tool's."""
    role: str = author["role"]
    name = author.get("name")
    if role == "tool" and isinstance(name, str) and name.strip():
        return f"{role} ({' '.join(name.split())})"
    return role


def _current_path(conversation: dict[str, Any], where: str) -> list[dict[str, Any]]:
    """The messages from the root to ``current_node``: the conversation as the app shows it
    (the other branches of the tree are not read). Nodes without a message (the root) are not
    messages and take no number."""
    mapping: dict[str, Any] = conversation["mapping"]
    if not mapping:  # a conversation opened and left: no node at all, so no path to find
        return []
    node_id = conversation.get("current_node")
    if not isinstance(node_id, str) or node_id not in mapping:
        raise Unreadable(f"{where} has no current_node in its mapping")
    path: list[dict[str, Any]] = []
    seen: set[str] = set()
    while node_id is not None:
        if not isinstance(node_id, str) or not isinstance(mapping.get(node_id), dict):
            raise Unreadable(f"{where}: node {node_id!r} is not in its mapping")
        if node_id in seen:
            raise Unreadable(f"{where}: its messages' parents form a loop")
        seen.add(node_id)
        node = mapping[node_id]
        if isinstance(node.get("message"), dict):
            path.append(node["message"])
        node_id = node.get("parent")
    path.reverse()
    return path


def _claude(conversation: dict[str, Any], where: str,
            not_read: NotRead) -> Iterator[tuple[str, str, Any]]:
    for position, message in enumerate(conversation["chat_messages"], 1):
        sender = message.get("sender") if isinstance(message, dict) else None
        if not isinstance(sender, str):
            raise Unreadable(f"{where} message {position} has no sender")
    for message in _claude_branch(conversation, where, not_read):
        yield message["sender"], claude_text(message, not_read.parts), message.get("created_at")


def _claude_branch(conversation: dict[str, Any], where: str,
                   not_read: NotRead) -> list[dict[str, Any]]:
    """The messages of one branch. Messages that name their parent (``parent_message_uuid``)
    form a tree, every branch of it in one list in the order written: the branch read ends at
    ``current_leaf_message_uuid``, else at the last message written, and goes up to the first
    message (whose parent is no message). Older exports, without parents, are one list.

    A parent that is not in the export (a message lost from it) ended the branch there, and
    every message before it went unread without a word: such a message is read after the
    message written before it, as messages without parents are, and ``not_read`` hears of it."""
    messages: list[dict[str, Any]] = conversation["chat_messages"]
    if not any(isinstance(m.get("parent_message_uuid"), str) for m in messages):
        return messages
    by_id = {m["uuid"]: m for m in messages if isinstance(m.get("uuid"), str)}
    written = {id(m): place for place, m in enumerate(messages)}
    leaf = conversation.get("current_leaf_message_uuid")
    message: dict[str, Any] | None = by_id.get(leaf) if isinstance(leaf, str) else None
    if isinstance(leaf, str) and message is None:
        not_read.gaps.append(f"{where}: its current leaf message is not in the export "
                             f"({_shown(leaf)}): read the branch ending at the last message "
                             "written")
    message = message or messages[-1]
    branch: list[dict[str, Any]] = []
    gaps: list[tuple[dict[str, Any], str, bool]] = []  # (message, its parent, read after one)
    seen: set[int] = set()
    guessed = 0  # the branch's length when it last went on by a guess (0: never)
    while message is not None:
        if id(message) in seen:
            if guessed:  # the guess came back to the branch: not taken, the branch ends there
                del branch[guessed:]
                gaps[-1] = (*gaps[-1][:2], False)
                break
            raise Unreadable(f"{where}: its messages' parents form a loop")
        seen.add(id(message))
        branch.append(message)
        parent = message.get("parent_message_uuid")
        if isinstance(parent, str) and parent in by_id:
            message = by_id[parent]
        elif not isinstance(parent, str) or parent == _NO_PARENT:
            message = None
        else:  # read after the message written before it, unless that one is read already
            before = written[id(message)] - 1
            after = before >= 0 and id(messages[before]) not in seen
            gaps.append((message, parent, after))
            message = messages[before] if after else None
            guessed = len(branch) if after else guessed
    branch.reverse()
    numbers = {id(m): number for number, m in enumerate(branch, 1)}
    for gap, parent, after in reversed(gaps):  # in the order read
        not_read.gaps.append(
            f"{where} message {numbers[id(gap)]} names a parent that is not in the export "
            f"({_shown(parent)}): " + ("read after the message written before it" if after
                                 else "read as the first message"))
    return branch


def _shown(uuid: str) -> str:
    """A message's id as a note names it: quoted, and cut when longer than an id is."""
    return repr(uuid if len(uuid) <= 40 else f"{uuid[:40]}…")

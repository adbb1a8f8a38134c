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
its passages."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from context_service.contextctl.ingestion.blocks import Anchors, Block, Document
from context_service.contextctl.ingestion.decoding import Unreadable, with_newlines
from context_service.contextctl.ingestion.meter import Done
from context_service.contextctl.ingestion.times import time_of

# (role, text, time) of each message of a conversation in order; ``where`` names the
# conversation in a file's reasons
Messages = Callable[[dict[str, Any], str], Iterator[tuple[str, str, Any]]]


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
    for number, conversation in enumerate(conversations, 1):
        where = f"conversation {number}"
        part = parts.new(_text_field(conversation, "id", "conversation_id", "uuid")
                         or f"conversation-{number}")
        title = _text_field(conversation, "title", "name").strip()
        for position, (role, text, when) in enumerate(messages(conversation, where), 1):
            # read even when the message is empty: a time that is no time refuses the file
            valid_from = time_of(when, f"{where} message {position}")
            said = with_newlines(text).strip()
            if said:
                document.blocks.append(Block(
                    (title,) if title else (), f"{part}/m{position}", f"{role}: {said}",
                    valid_from=valid_from, alone=True,
                    part=part if len(conversations) > 1 else ""))
        done(number, len(conversations))
    return document


def _text_field(value: dict[str, Any], *keys: str) -> str:
    """The first of ``keys`` holding text, else empty."""
    return next((value[k] for k in keys if isinstance(value.get(k), str) and value[k]), "")


def _chatgpt(conversation: dict[str, Any], where: str) -> Iterator[tuple[str, str, Any]]:
    for position, message in enumerate(_current_path(conversation, where), 1):
        author = message.get("author")
        if not isinstance(author, dict) or not isinstance(author.get("role"), str):
            raise Unreadable(f"{where} message {position} has no author role")
        yield _speaker(author), _chatgpt_text(message.get("content")), message.get("create_time")


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


def _chatgpt_text(content: Any) -> str:
    """The text parts (an image or a file part is not text); without parts, the ``text`` of a
    code block or a tool's output."""
    if not isinstance(content, dict):
        return content if isinstance(content, str) else ""
    parts = content.get("parts")
    if isinstance(parts, list):
        return "\n\n".join(p.strip() for p in parts if isinstance(p, str) and p.strip())
    text = content.get("text")
    return text if isinstance(text, str) else ""


def _claude(conversation: dict[str, Any], where: str) -> Iterator[tuple[str, str, Any]]:
    for position, message in enumerate(conversation["chat_messages"], 1):
        sender = message.get("sender") if isinstance(message, dict) else None
        if not isinstance(sender, str):
            raise Unreadable(f"{where} message {position} has no sender")
    for message in _claude_branch(conversation, where):
        yield message["sender"], _claude_text(message), message.get("created_at")


def _claude_branch(conversation: dict[str, Any], where: str) -> list[dict[str, Any]]:
    """The messages of one branch. Messages that name their parent (``parent_message_uuid``)
    form a tree, every branch of it in one list in the order written: the branch read ends at
    ``current_leaf_message_uuid``, else at the last message written, and goes up to the first
    message (whose parent is no message). Older exports, without parents, are one list."""
    messages: list[dict[str, Any]] = conversation["chat_messages"]
    if not any(isinstance(m.get("parent_message_uuid"), str) for m in messages):
        return messages
    by_id = {m["uuid"]: m for m in messages if isinstance(m.get("uuid"), str)}
    leaf = conversation.get("current_leaf_message_uuid")
    message: dict[str, Any] | None = by_id.get(leaf) if isinstance(leaf, str) else None
    message = message or messages[-1]
    branch: list[dict[str, Any]] = []
    seen: set[int] = set()
    while message is not None:
        if id(message) in seen:
            raise Unreadable(f"{where}: its messages' parents form a loop")
        seen.add(id(message))
        branch.append(message)
        parent = message.get("parent_message_uuid")
        message = by_id.get(parent) if isinstance(parent, str) else None
    branch.reverse()
    return branch


def _claude_text(message: dict[str, Any]) -> str:
    """Its ``content`` blocks of text (a tool's call or result is not; ``text`` then holds a
    placeholder for it); a message without such blocks, its ``text``."""
    content = message.get("content")
    blocks = [b["text"] for b in content if isinstance(b, dict) and b.get("type") == "text"
              and isinstance(b.get("text"), str)] if isinstance(content, list) else []
    if blocks:
        return "\n\n".join(b.strip() for b in blocks if b.strip())
    text = message.get("text")
    return text if isinstance(text, str) else ""

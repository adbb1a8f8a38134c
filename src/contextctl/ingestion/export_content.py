"""The text of one message of a chat export, and a count of what in it is not text.

A message's content comes in many shapes, and a reader that knows some of them drops the rest
without a word: the user then searches for something they said and it is not there. So only
strings are read, in the shapes below, and everything else is counted by its kind (a
``content_type``, a block's ``type``, ``<content_type>.<field>`` for a field that is not a
string) for the report to say how much was left out.

- ChatGPT: ``parts`` (``text``, ``multimodal_text``): strings as they are, an image pointer
  ``[image]`` where it stands, a voice message's ``audio_transcription`` its ``text``;
  ``tether_quote`` and ``sonic_webpage`` (a quote from a page or a file): ``title``, ``url``,
  then ``text``; ``tether_browsing_display`` (a page the browser opened): ``result``; any other
  type (``code``, ``execution_output``, ``system_error``): ``text``. The model's reasoning
  (``thoughts``, ``reasoning_recap``) is its working, not what either side said, and the reply
  after it carries its conclusion: it is left out, as Claude.ai's ``thinking`` is.
- Claude.ai: ``content`` blocks of type ``text`` (a tool's call or result, ``thinking``, are
  not text, and ``text`` then holds a placeholder for them: a message of such blocks alone
  gives no text); a message without blocks (older exports), ``text``.
  Attachments and files are not read."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

IMAGE = "[image]"
REASONING = frozenset({"thoughts", "reasoning_recap"})
QUOTES = frozenset({"tether_quote", "sonic_webpage"})
_QUOTE_FIELDS = ("title", "url")
_LISTED = 5  # the most messages or conversations a note names one by one
# a part or value that is not an object, named as JSON names it
_JSON_KINDS = {bool: "boolean", int: "number", float: "number", list: "array"}


def chatgpt_text(content: Any, left_out: Counter[str]) -> str:
    """The text of a ChatGPT message's ``content``; what is not read is counted in
    ``left_out``."""
    if (plain := _not_an_object(content, left_out)) is not None:
        return plain
    kind = content.get("content_type")
    kind = kind if isinstance(kind, str) and kind else "content"
    if kind in REASONING:
        left_out[kind] += 1
        return ""
    parts = content.get("parts")
    if isinstance(parts, list):
        return _joined(_part(p, left_out) for p in parts)
    if kind in QUOTES:
        head = "\n".join(_string(content, f, kind, left_out) for f in _QUOTE_FIELDS)
        return _joined([head, _string(content, "text", kind, left_out)])
    key = "result" if kind == "tether_browsing_display" else "text"
    if key in content:
        return _string(content, key, kind, left_out)
    if kind != "text":  # a type of its own fields (model_editable_context, ...)
        left_out[kind] += 1
    return ""


def _part(part: Any, left_out: Counter[str]) -> str:
    if (plain := _not_an_object(part, left_out)) is not None:
        return plain
    kind = part.get("content_type")
    if kind == "image_asset_pointer":
        return IMAGE
    if kind == "audio_transcription" and isinstance(part.get("text"), str):
        return str(part["text"])
    left_out[kind if isinstance(kind, str) and kind else "object"] += 1
    return ""


def _not_an_object(value: Any, left_out: Counter[str]) -> str | None:
    """A content or a part that is no object: a string is its text, ``null`` none, anything
    else none and counted; ``None`` for an object, which its kind says how to read."""
    if value is None or isinstance(value, str):
        return value or ""
    if not isinstance(value, dict):
        left_out[_kind(value)] += 1
        return ""
    return None


def _string(content: dict[str, Any], field: str, kind: str, left_out: Counter[str]) -> str:
    """The field when it is a string; absent or ``null``, nothing; else counted."""
    value = content.get(field)
    if value is not None and not isinstance(value, str):
        left_out[f"{kind}.{field}"] += 1
    return value.strip() if isinstance(value, str) else ""


def claude_text(message: dict[str, Any], left_out: Counter[str]) -> str:
    """Its ``content`` blocks of text; a message without such blocks, its ``text``. Other
    blocks, attachments and files are counted in ``left_out``."""
    content = message.get("content")
    blocks: list[str] = []
    for block in content if isinstance(content, list) else []:
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "text" and isinstance(block.get("text"), str):
            blocks.append(block["text"])
        elif block is not None:
            left_out[kind if isinstance(kind, str) and kind else _kind(block)] += 1
    for key, kind in (("attachments", "attachment"), ("files", "file")):
        held = message.get(key)
        if isinstance(held, list) and held:
            left_out[kind] += len(held)
    if blocks or (isinstance(content, list) and content):
        # blocks none of which is text (a tool's call, thinking): ``text`` then holds the
        # app's placeholder for what it cannot show, not anything either side said
        return _joined(blocks)
    text = message.get("text")
    return text if isinstance(text, str) else ""


def _joined(pieces: Any) -> str:
    return "\n\n".join(p.strip() for p in pieces if p.strip())


def _kind(value: Any) -> str:
    return _JSON_KINDS.get(type(value), "object")


@dataclass(slots=True)
class NotRead:
    """What one export's reading left out or read in a way of its own, for the report."""

    parts: Counter[str] = field(default_factory=Counter)  # by kind
    # a message whose parent, or a conversation whose current leaf, is not in the export
    gaps: list[str] = field(default_factory=list)
    empty: list[str] = field(default_factory=list)  # conversations that gave no passage

    def notes(self) -> list[str]:
        found: list[str] = []
        total = sum(self.parts.values())
        if total:
            kinds = ", ".join(f"{self.parts[k]} {k}" for k in sorted(self.parts))
            found.append(f"left out {total} {'parts that are' if total > 1 else 'part that is'}"
                         f" not text ({kinds})")
        found.extend(self.gaps[:_LISTED])
        if len(self.gaps) > _LISTED:
            found.append(f"and {len(self.gaps) - _LISTED} more messages read as above, their "
                         "parent or leaf not in the export")
        if self.empty:
            listed = ", ".join(self.empty[:_LISTED]) + (", …" if len(self.empty) > _LISTED
                                                        else "")
            found.append(f"{len(self.empty)} conversation{'s' if len(self.empty) > 1 else ''} "
                         f"gave no passage (no message with text): {listed}")
        return found

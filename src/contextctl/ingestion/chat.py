"""Chat transcripts in JSON or JSON Lines: one block per message, ``<speaker>: <text>``, its time
as ``validFrom``. Read are messages ``{"role","content","time"}`` (also ``speaker`` and ``text``,
``timestamp``), as a list, under ``"messages"`` (or ``"data"`` then ``"messages"``) or one a
line; the samples of the LoCoMo data set (``conversation`` with ``session_<n>`` turns and
``session_<n>_date_time``), each a document of its own in a file of several; and the data
exports of ChatGPT and Claude.ai (``exports``)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from context_service.contextctl.ingestion import exports
from context_service.contextctl.ingestion.blocks import Anchors, Block, Document, slug
from context_service.contextctl.ingestion.decoding import (
    LINE_ENDS,
    NotADocument,
    Unreadable,
    with_newlines,
)
from context_service.contextctl.ingestion.meter import Done, unreported
from context_service.contextctl.ingestion.times import time_of as _time

_SESSION = re.compile(r"session_(\d+)")


class NotTranscript(NotADocument):
    """Valid JSON that is not a transcript (a folder's other JSON files are left out)."""


def parse_json(text: str, name: str, done: Done = unreported) -> Document:
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise Unreadable(f"not JSON ({exc})") from exc
    if _is_locomo(data):
        samples = data if isinstance(data, list) else [data]
        for number, sample in enumerate(samples, 1):  # a data set with one broken sample
            if not _is_sample(sample):
                raise Unreadable(f"sample {number} has no conversation")
        return _locomo(samples, name, done)
    messages = _messages_of(data)
    if not isinstance(messages, list) or not any(_is_message(m) for m in messages):
        export = exports.reader_of(data)
        if export is not None:
            return export(name, done)
        raise NotTranscript("JSON, but not a chat transcript (a list of messages with role "
                            "and content, LoCoMo samples, or a ChatGPT or Claude export)")
    for number, message in enumerate(messages, 1):  # a transcript with a bad message
        if not _is_message(message):
            raise Unreadable(f"message {number} has no role and content")
    return _messages(messages, name, done)


def parse_jsonl(text: str, name: str, done: Done = unreported) -> Document:
    """``done`` hears of each line read (the messages' own work is small beside it)."""
    messages = []
    not_message = 0  # the first line that is JSON but no message
    lines = LINE_ENDS.split(text)
    for number, line in enumerate(lines, 1):
        done(number, len(lines))
        if not line.strip():
            continue
        try:
            message = json.loads(line)
        except ValueError as exc:
            raise Unreadable(f"line {number} is not JSON ({exc})") from exc
        if _is_message(message):
            messages.append(message)
        else:
            not_message = not_message or number
    if not_message:
        reason = f"line {not_message} is not a message with role and content"
        raise Unreadable(reason) if messages else NotTranscript(reason)
    if not messages:
        raise Unreadable("no messages")
    return _messages(messages, name)


def _messages_of(data: Any) -> Any:
    """The messages: the data itself, or under ``"messages"``, or under ``"data"`` then
    ``"messages"`` (as some tools wrap an API's reply)."""
    if not isinstance(data, dict):
        return data
    if "messages" not in data and isinstance(data.get("data"), dict):
        return data["data"].get("messages")
    return data.get("messages")


def _is_message(value: Any) -> bool:
    return (isinstance(value, dict) and isinstance(value.get("role", value.get("speaker")), str)
            and isinstance(value.get("content", value.get("text")), str))


def _speaker(message: dict[str, Any]) -> str:
    return str(message.get("role", message.get("speaker")))


def _text(message: dict[str, Any]) -> str:
    return with_newlines(str(message.get("content", message.get("text"))))


def _is_sample(value: Any) -> bool:
    """A LoCoMo sample: a ``conversation`` object, and not a message (whose ``conversation`` is
    its chat's metadata, as exports write it)."""
    return (isinstance(value, dict) and isinstance(value.get("conversation"), dict)
            and not _is_message(value))


def _is_locomo(data: Any) -> bool:
    """LoCoMo samples, one or more of them perhaps broken: one broken sample makes the file an
    error, not "not a transcript" (which a folder leaves out without a word)."""
    samples = data if isinstance(data, list) else [data]
    return any(_is_sample(s) for s in samples)


def _messages(messages: list[dict[str, Any]], name: str, done: Done = unreported) -> Document:
    document = Document(name)
    for number, message in enumerate(messages, 1):
        done(number, len(messages))
        speaker = _speaker(message)
        text = _text(message).strip()
        # read even when the message is empty and left out: a time that is no time refuses the
        # file wherever it stands
        when = _time(message.get("time", message.get("timestamp")), f"message {number}")
        if text:
            document.blocks.append(Block((), f"m{number}", f"{speaker}: {text}",
                                         valid_from=when, alone=True))
    return document


def _locomo(samples: list[dict[str, Any]], name: str, done: Done) -> Document:
    """``done`` hears of each session read."""
    document = Document(name)
    sessions = [(label, part, conversation, number, key)
                for label, part, conversation in _conversations(samples)
                for number, key in _sessions(conversation)]
    for read, (label, part, conversation, number, key) in enumerate(sessions, 1):
        written = conversation.get(f"{key}_date_time")
        when = _time(written, f"{label} {key}")
        # the session's date as written goes in the title too: packs score words, not validFrom,
        # and "when did ..." questions name dates (LoCoMo recall@5 0.675 without, 0.693 with)
        session = f"Session {number}" + (f" ({written.strip()})" if when and isinstance(
            written, str) else "")
        for position, turn in enumerate(conversation[key], 1):
            if not _is_message(turn):
                raise Unreadable(f"{label} {key} turn {position} has no speaker and text")
            said = _text(turn).strip()
            if turn.get("blip_caption"):
                said = f"{said} [shares a photo: {turn['blip_caption']}]".lstrip()
            if not said:  # an empty turn, as an empty message, gives no passage
                continue
            text = f"{_speaker(turn)}: {said}"
            turn_id = slug(str(turn.get("dia_id") or f"D{number}:{position}").replace(":", "-"))
            document.blocks.append(Block((label, session),
                                         f"{slug(label)}/{turn_id}", text, valid_from=when,
                                         alone=True, part=part))
        done(read, len(sessions))
    return document


def _conversations(samples: list[dict[str, Any]]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """(the sample's label, its document's part, its conversation) of each sample, in order. A
    file of several samples makes each a document of its own, ``<file>#<label>`` (the label's
    slug, made unique in the file as a heading's anchor is); a file of one is one document,
    named by the file as it always was."""
    parts = Anchors()
    for index, sample in enumerate(samples, 1):
        label = str(sample.get("sample_id") or f"conversation-{index}")
        yield label, parts.new(label) if len(samples) > 1 else "", sample["conversation"]


def _sessions(conversation: dict[str, Any]) -> list[tuple[int, str]]:
    """(its number, its key) of each session of a conversation, by number."""
    return sorted((int(m.group(1)), key) for key in conversation
                  if (m := _SESSION.fullmatch(key)) and isinstance(conversation[key], list))

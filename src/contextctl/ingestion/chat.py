"""Chat transcripts in JSON or JSON Lines: one block per message, ``<speaker>: <text>``, its time
as ``validFrom``. Two shapes are read: messages ``{"role","content","time"}`` (also ``speaker``
and ``text``, ``timestamp``), as a list, under ``"messages"`` or one a line; and the samples of
the LoCoMo data set (``conversation`` with ``session_<n>`` turns and ``session_<n>_date_time``)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from context_service.contextctl.ingestion.blocks import Block, Document, slug
from context_service.contextctl.ingestion.decoding import Unreadable

LOCOMO_TIME = "%I:%M %p on %d %B, %Y"  # "1:56 pm on 8 May, 2023"
_SESSION = re.compile(r"session_(\d+)")
_LINE_ENDS = re.compile(r"\r\n?|\n")


class NotTranscript(Unreadable):
    """Valid JSON that is not a transcript (a folder's other JSON files are left out)."""


def parse_json(text: str, name: str) -> Document:
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise Unreadable(f"not JSON ({exc})") from exc
    if _is_locomo(data):
        return _locomo(data if isinstance(data, list) else [data], name)
    messages = data.get("messages") if isinstance(data, dict) else data
    if not isinstance(messages, list) or not any(_is_message(m) for m in messages):
        raise NotTranscript("JSON, but not a chat transcript (a list of messages with role "
                            "and content, or LoCoMo samples)")
    for number, message in enumerate(messages, 1):  # a transcript with a bad message
        if not _is_message(message):
            raise Unreadable(f"message {number} has no role and content")
    return _messages(messages, name)


def parse_jsonl(text: str, name: str) -> Document:
    messages = []
    not_message = 0  # the first line that is JSON but no message
    # lines end at \n, \r\n or \r only: U+2028 and U+0085 may stand in a JSON string
    for number, line in enumerate(_LINE_ENDS.split(text), 1):
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


def _is_message(value: Any) -> bool:
    return (isinstance(value, dict) and isinstance(value.get("role", value.get("speaker")), str)
            and isinstance(value.get("content", value.get("text")), str))


def _speaker(message: dict[str, Any]) -> str:
    return str(message.get("role", message.get("speaker")))


def _text(message: dict[str, Any]) -> str:
    return str(message.get("content", message.get("text")))


def _is_locomo(data: Any) -> bool:
    samples = data if isinstance(data, list) else [data]
    return bool(samples) and all(
        isinstance(s, dict) and isinstance(s.get("conversation"), dict) for s in samples)


def _messages(messages: Iterable[dict[str, Any]], name: str) -> Document:
    document = Document(name)
    for number, message in enumerate(messages, 1):
        speaker = _speaker(message)
        text = _text(message).strip()
        when = message.get("time", message.get("timestamp"))
        if text:
            document.blocks.append(Block((), f"m{number}", f"{speaker}: {text}",
                                         valid_from=_time(when, f"message {number}"), alone=True))
    return document


def _locomo(samples: list[dict[str, Any]], name: str) -> Document:
    document = Document(name)
    for index, sample in enumerate(samples, 1):
        conversation = sample["conversation"]
        label = str(sample.get("sample_id") or f"conversation-{index}")
        sessions = sorted((int(m.group(1)), key) for key in conversation
                          if (m := _SESSION.fullmatch(key)) and isinstance(conversation[key], list))
        for number, key in sessions:
            when = _time(conversation.get(f"{key}_date_time"), f"{label} {key}")
            for position, turn in enumerate(conversation[key], 1):
                if not _is_message(turn):
                    raise Unreadable(f"{label} {key} turn {position} has no speaker and text")
                text = f"{_speaker(turn)}: {_text(turn).strip()}"
                if turn.get("blip_caption"):
                    text += f" [shares a photo: {turn['blip_caption']}]"
                turn_id = slug(str(turn.get("dia_id") or f"D{number}:{position}").replace(":", "-"))
                document.blocks.append(Block((label, f"Session {number}"),
                                             f"{slug(label)}/{turn_id}", text, valid_from=when,
                                             alone=True))
    return document


def _time(value: Any, where: str) -> str | None:
    """RFC 3339 in UTC (``Z``); a time without a zone is taken as UTC; numbers are seconds since
    the epoch. A time that is none of these refuses the file."""
    if value is None or value == "":
        return None
    try:
        if isinstance(value, int | float) and not isinstance(value, bool):
            moment = datetime.fromtimestamp(value, UTC)
        elif isinstance(value, str):
            moment = _parse_text_time(value.strip())
        else:
            raise ValueError(value)
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        moment = moment.astimezone(UTC)  # OverflowError: the instant leaves years 1 to 9999
    except (ValueError, OverflowError, OSError) as exc:
        raise Unreadable(f"{where}: time {value!r} is not a date and time") from exc
    return moment.isoformat().replace("+00:00", "Z")


def _parse_text_time(value: str) -> datetime:
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        return datetime.strptime(value, LOCOMO_TIME)

"""Chat transcripts in JSON or JSON Lines: one block per message, ``<speaker>: <text>``, its time
as ``validFrom``. Two shapes are read: messages ``{"role","content","time"}`` (also ``speaker``
and ``text``, ``timestamp``), as a list, under ``"messages"`` or one a line; and the samples of
the LoCoMo data set (``conversation`` with ``session_<n>`` turns and ``session_<n>_date_time``)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

from context_service.contextctl.ingestion.blocks import Block, Document, slug
from context_service.contextctl.ingestion.decoding import Unreadable
from context_service.contextctl.ingestion.meter import Done, unreported

MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august",
          "september", "october", "november", "december")
# LoCoMo's "1:56 pm on 8 May, 2023": the pattern strptime makes of "%I:%M %p on %d %B, %Y" in the
# C locale, case-insensitive, so that it takes exactly what it took. Not strptime itself: its
# month names and am/pm are those of the process's LC_TIME, and a library that calls
# setlocale(LC_ALL, "") under a German locale would have it refuse "May"
LOCOMO_TIME = re.compile(
    r"(?P<hour>1[0-2]|0[1-9]|[1-9]):(?P<minute>[0-5]\d|\d)\s+(?P<half>am|pm)\s+on\s+"
    r"(?P<day>3[0-1]|[1-2]\d|0[1-9]|[1-9]| [1-9])\s+(?P<month>" + "|".join(MONTHS) + r"),\s+"
    r"(?P<year>\d\d\d\d)", re.IGNORECASE)
_SESSION = re.compile(r"session_(\d+)")
_LINE_ENDS = re.compile(r"\r\n?|\n")


class NotTranscript(Unreadable):
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
    messages = data.get("messages") if isinstance(data, dict) else data
    if not isinstance(messages, list) or not any(_is_message(m) for m in messages):
        raise NotTranscript("JSON, but not a chat transcript (a list of messages with role "
                            "and content, or LoCoMo samples)")
    for number, message in enumerate(messages, 1):  # a transcript with a bad message
        if not _is_message(message):
            raise Unreadable(f"message {number} has no role and content")
    return _messages(messages, name, done)


def parse_jsonl(text: str, name: str, done: Done = unreported) -> Document:
    """``done`` hears of each line read (the messages' own work is small beside it)."""
    messages = []
    not_message = 0  # the first line that is JSON but no message
    # lines end at \n, \r\n or \r only: U+2028 and U+0085 may stand in a JSON string
    lines = _LINE_ENDS.split(text)
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


def _is_message(value: Any) -> bool:
    return (isinstance(value, dict) and isinstance(value.get("role", value.get("speaker")), str)
            and isinstance(value.get("content", value.get("text")), str))


def _speaker(message: dict[str, Any]) -> str:
    return str(message.get("role", message.get("speaker")))


def _text(message: dict[str, Any]) -> str:
    """Its lines ending at ``\\n`` as in every format: the same message typed on Windows
    (``\\r\\n``) is the same passage."""
    return _LINE_ENDS.sub("\n", str(message.get("content", message.get("text"))))


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
    sessions = [(label, conversation, number, key)
                for label, conversation in _conversations(samples)
                for number, key in _sessions(conversation)]
    for read, (label, conversation, number, key) in enumerate(sessions, 1):
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
                                         alone=True))
        done(read, len(sessions))
    return document


def _conversations(samples: list[dict[str, Any]]) -> Iterator[tuple[str, dict[str, Any]]]:
    """(the sample's label, its conversation) of each sample, in order."""
    for index, sample in enumerate(samples, 1):
        yield str(sample.get("sample_id") or f"conversation-{index}"), sample["conversation"]


def _sessions(conversation: dict[str, Any]) -> list[tuple[int, str]]:
    """(its number, its key) of each session of a conversation, by number."""
    return sorted((int(m.group(1)), key) for key in conversation
                  if (m := _SESSION.fullmatch(key)) and isinstance(conversation[key], list))


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
        return _locomo_time(value)


def _locomo_time(value: str) -> datetime:
    found = LOCOMO_TIME.fullmatch(value)
    if found is None:
        raise ValueError(value)
    hour = int(found["hour"]) % 12 + (12 if found["half"].lower() == "pm" else 0)
    # a name that matched only by case folding (a long s, U+017F, for an s) is no month, as before
    month = MONTHS.index(found["month"].lower()) + 1
    # a day the month does not have (31 April) is refused here
    return datetime(int(found["year"]), month, int(found["day"]), hour, int(found["minute"]))

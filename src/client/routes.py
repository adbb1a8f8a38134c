"""The agent routes the clients call: path, and the Struct each answer decodes into."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, TypeVar
from urllib.parse import quote

import httpx
import msgspec

from context_service.client.errors import invalid_answer, overlong
from context_service.contract import agent as c

T = TypeVar("T")

API = "/api/agent/v1"
PACKS = API + "/context-packs"
STREAM = PACKS + "/stream"
SETS_LIST, SETS_GET = API + "/context-sets/list", API + "/context-sets/get"
LOOKUP, MATCH = API + "/definitions/lookup", API + "/verified-answers/match"
FIELDS_LIST, FIELDS_QUERY = API + "/fields/list", API + "/fields/query"
RUN = API + "/query-templates/run"
REPLAYS = API + "/replays/"  # and the replay id
NDJSON = "application/x-ndjson"
# the routes that record nothing: sending one again (after a bare 503) changes nothing, where a
# pack, a replay or a template run is recorded each time it is applied
READS = frozenset({SETS_LIST, SETS_GET, LOOKUP, MATCH, FIELDS_LIST, FIELDS_QUERY})
# a pack stream's line longer than this is refused, not held: far beyond any item or footer
MAX_LINE = 16 * 2**20
# a pack's deadline when its budget names none, and the longest it may name (§7)
DEFAULT_LATENCY_MS, MAX_LATENCY_MS = 15000, 60000
DEADLINE_MARGIN = 15.0
# an HTTP field value as this client sends it: visible ASCII, spaces and tabs (RFC 9110 §5.5)
_FIELD_VALUE = re.compile(r"[\x20-\x7e\t]*")


UNCARRIABLE = ("holds a character no HTTP header can carry (a line break, a control character, "
               "or one beyond ASCII)")


def carriable(value: str) -> bool:
    """Whether an HTTP header can carry ``value`` as this client sends it."""
    return _FIELD_VALUE.fullmatch(value) is not None


def headers(token: str, extra: Mapping[str, str] | None) -> dict[str, str]:
    """Every request's headers: the credential's, and ``extra``. A value no header can carry
    (a line break, as a token read from a file ends with; a character beyond ASCII) raises
    ``ValueError`` naming the header, never quoting it: httpx's own error quotes the value,
    and the credential with it."""
    sent = {"Authorization": f"Bearer {token}", "Content-Type": "application/json",
            "User-Agent": "context-service-client", **(extra or {})}
    for name, value in sent.items():
        if not carriable(value):
            told = "the token" if name == "Authorization" else f"the header {name!r}"
            raise ValueError(f"{told} {UNCARRIABLE}")
    return sent


def segment(value: str) -> str:
    """One path segment, percent-encoded (a name may hold ``/`` or ``:``). ``.`` and ``..``
    are encoded too: URL normalisation removes them as plain segments (``replays/..`` is the
    agent API's root, ``contexts/./grants`` another context's route)."""
    if value in (".", ".."):
        return "%2E" * len(value)
    return quote(value, safe="")


def replay(replay_id: str) -> str:
    return REPLAYS + segment(replay_id)


def pack_request(request: c.PackRequest | str) -> c.PackRequest:
    return c.PackRequest(task=request) if isinstance(request, str) else request


class _Budget(msgspec.Struct, rename="camel"):
    max_latency_ms: object = None


class _Deadline(msgspec.Struct):
    budget: _Budget | None = None
    mode: object = None  # a replay's


_deadline = msgspec.json.Decoder(_Deadline)


def patience(path: str, body: bytes) -> float:
    """Seconds the answer to ``body`` may take to start: for a pack, its deadline and a margin
    (the service checks the deadline before each step of retrieval, so the step under way,
    packing and writing come after it); for a recompute, which rebuilds the pack under the
    deadline it recorded (known to the service only), the longest a pack may name and the
    margin; 0 for any other route."""
    if path not in (PACKS, STREAM) and not path.startswith(REPLAYS):
        return 0.0
    try:
        sent = _deadline.decode(body)
    except msgspec.DecodeError:  # the service refuses it, at once
        sent = _Deadline()
    if path.startswith(REPLAYS):
        return MAX_LATENCY_MS / 1000 + DEADLINE_MARGIN if sent.mode == "recompute" else 0.0
    budget = sent.budget
    latency = budget.max_latency_ms if budget is not None else None
    if not isinstance(latency, int) or isinstance(latency, bool):
        latency = DEFAULT_LATENCY_MS
    return min(max(latency, 0), MAX_LATENCY_MS) / 1000 + DEADLINE_MARGIN


def waited(timeout: httpx.Timeout, at_least: float) -> httpx.Timeout:
    """``timeout`` with its read timeout at least ``at_least`` seconds (none stays none)."""
    read = None if timeout.read is None else max(timeout.read, at_least)
    return httpx.Timeout(connect=timeout.connect, read=read, write=timeout.write,
                         pool=timeout.pool)


def encode(body: msgspec.Struct | dict[str, Any]) -> bytes:
    return msgspec.json.encode(body)


def decoded(raw: bytes, answer: type[T], status: int) -> T:
    """A 2xx answer as ``answer``; ``InvalidAnswer`` when it is not one."""
    try:
        return msgspec.json.decode(raw, type=answer)
    except msgspec.DecodeError as exc:  # msgspec's ValidationError is one
        raise invalid_answer(exc, status, getattr(answer, "__name__", str(answer))) from exc


class Cut(bytes):
    """A stream's last line that ended without its line feed: cut mid-line, unless it decodes."""


class Lines:
    """A stream's bytes as its lines (each ended by LF, a CR before it dropped), none longer
    than ``limit``: one that grows past it raises instead of being held."""

    def __init__(self, limit: int = MAX_LINE) -> None:
        self.limit = limit
        self._pending = bytearray()

    def feed(self, chunk: bytes) -> list[bytes]:
        """The lines ``chunk`` ends."""
        lines: list[bytes] = []
        start = 0
        while (end := chunk.find(b"\n", start)) >= 0:
            self._pending += chunk[start:end]
            lines.append(self._taken())
            start = end + 1
        self._pending += chunk[start:]
        self._bounded()
        return lines

    def end(self) -> list[bytes]:
        """The last line, if the stream ended without its line feed."""
        return [Cut(self._taken())] if self._pending else []

    def _taken(self) -> bytes:
        self._bounded()
        line = bytes(self._pending).removesuffix(b"\r")
        self._pending.clear()
        return line

    def _bounded(self) -> None:
        if len(self._pending) > self.limit:
            raise overlong(self.limit)


def split(chunks: Iterable[bytes], limit: int = MAX_LINE) -> Iterator[bytes]:
    """The lines of a stream's chunks (``Lines``), the last one a ``Cut`` if unended."""
    lines = Lines(limit)
    for chunk in chunks:
        yield from lines.feed(chunk)
    yield from lines.end()


_line = msgspec.json.Decoder(c.PackLine)
LINE_TYPES = frozenset(kind.__struct_config__.tag for kind in (
    c.HeaderLine, c.ItemLine, c.FooterLine, c.ErrorLine))


class _Kind(msgspec.Struct):
    type: object = None


_kind = msgspec.json.Decoder(_Kind)


def line(raw: bytes) -> c.PackLine | None:
    """One line of a pack stream; None for a line whose ``type`` this client does not know (a
    later version's), which a reader skips as an answer's unknown keys are. Any other line
    that does not decode raises ``msgspec`` 's error."""
    try:
        return _line.decode(raw)
    except msgspec.ValidationError:
        try:
            kind = _kind.decode(raw).type
        except msgspec.MsgspecError:
            kind = None
        if isinstance(kind, str) and kind not in LINE_TYPES:
            return None
        raise

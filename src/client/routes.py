"""The agent routes the clients call: path, and the Struct each answer decodes into."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import msgspec

from context_service.contract import agent as c

API = "/api/agent/v1"
PACKS = API + "/context-packs"
STREAM = PACKS + "/stream"
SETS_LIST, SETS_GET = API + "/context-sets/list", API + "/context-sets/get"
LOOKUP, MATCH = API + "/definitions/lookup", API + "/verified-answers/match"
FIELDS_LIST, FIELDS_QUERY = API + "/fields/list", API + "/fields/query"
RUN = API + "/query-templates/run"
NDJSON = "application/x-ndjson"


def replay(replay_id: str) -> str:
    return f"{API}/replays/{quote(replay_id, safe='')}"


def pack_request(request: c.PackRequest | str) -> c.PackRequest:
    return c.PackRequest(task=request) if isinstance(request, str) else request


def encode(body: msgspec.Struct | dict[str, Any]) -> bytes:
    return msgspec.json.encode(body)


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

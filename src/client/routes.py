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


def line(raw: bytes) -> c.PackLine:
    return _line.decode(raw)

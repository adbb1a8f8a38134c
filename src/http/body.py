"""Strict request bodies, decoded with msgspec so the order of checks and messages are ours."""

from __future__ import annotations

from datetime import datetime
from typing import TypeVar

import msgspec

from context_service.domain.errors import RequestInvalidError
from context_service.domain.values import parse_timestamp

MAX_BODY = 1024 * 1024
T = TypeVar("T")


def check_present(raw: bytes) -> None:
    if len(raw) > MAX_BODY:
        raise RequestInvalidError("request body too large")
    if not raw.strip():
        raise RequestInvalidError("request body is required")


def decode(raw: bytes, shape: type[T]) -> T:
    check_present(raw)
    try:
        return msgspec.json.decode(raw, type=shape, strict=True)
    except msgspec.ValidationError as exc:
        raise RequestInvalidError(_message(str(exc))) from exc
    except msgspec.DecodeError as exc:
        raise RequestInvalidError(f"malformed JSON body: {exc}") from exc


def timestamp(value: str | None, field: str) -> datetime | None:
    """A body timestamp (spec 1.1.2): RFC 3339 with a zone, in UTC; None when absent.

    Checked even where the route then ignores the value (grant ``createdAt``, consumer ``since``).
    """
    if value is None:
        return None
    parsed = parse_timestamp(value)
    if parsed is None:
        raise RequestInvalidError(
            f'{field} must be an RFC 3339 timestamp with a zone at "$.{field}"')
    return parsed


def _message(text: str) -> str:
    # msgspec: "Object contains unknown field `foo` - at `$.workspace`"
    text = text.replace("`", '"')
    if text.startswith("Expected `object`") or text.startswith('Expected "object"'):
        return "request body must be a JSON object"
    return text[0].lower() + text[1:] if text else "invalid request body"

"""Opaque page cursors of the ``/v1`` routes: a msgspec Struct as unpadded base64url of its
compact JSON. A cursor is taken only in the route's own spelling: the base64 decoder would skip
stray characters and padding, and JSON takes other spellings of the same fields."""

from __future__ import annotations

import base64
import binascii
import re
from typing import TypeVar

import msgspec

S = TypeVar("S", bound=msgspec.Struct)
_BASE64URL = re.compile(r"[A-Za-z0-9_-]*")


def encode(cursor: msgspec.Struct) -> str:
    return base64.urlsafe_b64encode(msgspec.json.encode(cursor)).decode().rstrip("=")


def fields(raw: str, kind: type[S]) -> S | None:
    """The fields ``raw`` holds, whatever JSON spelling they have; None when it holds none."""
    if _BASE64URL.fullmatch(raw) is None:
        return None
    try:
        return msgspec.json.decode(base64.urlsafe_b64decode(raw + "=" * (-len(raw) % 4)),
                                   type=kind)
    except (binascii.Error, ValueError, msgspec.DecodeError, msgspec.ValidationError):
        return None


def decode(raw: str, kind: type[S]) -> S | None:
    """The cursor ``raw`` is, only when it is byte for byte one ``encode`` writes."""
    cursor = fields(raw, kind)
    return cursor if cursor is not None and encode(cursor) == raw else None

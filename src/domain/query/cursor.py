"""The request fingerprint and the opaque paging cursor (spec 5.4).

A cursor is base64url without padding of ``{"o":<offset>,"q":"<fingerprint>"}``; it is valid only
for a request with the same fingerprint (same query text and filters; ``limit`` may change).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from collections.abc import Sequence

import msgspec

_BASE64URL = re.compile(r"[A-Za-z0-9_-]*")
_encoder = msgspec.json.Encoder()


class _Cursor(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    o: int
    q: str


_decoder = msgspec.json.Decoder(_Cursor)


def fingerprint(contexts: Sequence[str], types: Sequence[str], source_contexts: Sequence[str],
                revisions: Sequence[str], ids: Sequence[str], query: str) -> str:
    """16 hex characters naming the request without its ``cursor`` and ``limit``."""
    doc: dict[str, object] = {}
    for key, values in (("contexts", contexts), ("types", types),
                        ("sourceContexts", source_contexts), ("revisions", revisions),
                        ("ids", ids)):
        if values:
            doc[key] = sorted(values)
    if query:
        doc["query"] = query
    return hashlib.sha256(_encoder.encode(doc)).hexdigest()[:16]


def encode_cursor(offset: int, fingerprint_: str) -> str:
    raw = _encoder.encode(_Cursor(offset, fingerprint_))
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def decode_cursor(cursor: str, fingerprint_: str) -> int | None:
    """The offset of a cursor issued for ``fingerprint_``, or None when it is not one."""
    if _BASE64URL.fullmatch(cursor) is None or len(cursor) % 4 == 1:
        return None
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        decoded = _decoder.decode(raw)
    except (binascii.Error, ValueError, msgspec.DecodeError):
        return None
    if decoded.o < 0 or decoded.q != fingerprint_:
        return None
    if encode_cursor(decoded.o, decoded.q) != cursor:
        return None  # not byte for byte a cursor this service wrote
    return decoded.o

"""Token format and keyed hashing (agent-context-api.md §4.1, §4.4, §4.5); pure.

A token is ``bdk_<16 hex id>_<43 base64url secret>``. Only the HMAC-SHA-256 of the whole token
under the credential key is ever stored; verification compares in constant time and an unknown id
is compared against a fixed dummy hash, so it costs the same as a known one.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re

CREDENTIAL_ID = re.compile(r"[0-9a-f]{16}")
TOKEN_PATTERN = re.compile(r"bdk_([0-9a-f]{16})_[A-Za-z0-9_-]{43}")
_BEARER = re.compile(r"[Bb][Ee][Aa][Rr][Ee][Rr] +(\S.*)")
DUMMY_HASH = "0" * 64
MAX_AUTHORIZATION = 512  # "Bearer" and a 64-character token, with room for spaces


def format_token(credential_id: str, secret: bytes) -> str:
    """The token of a credential id and its 32 random secret bytes."""
    encoded = base64.urlsafe_b64encode(secret).rstrip(b"=").decode()
    return f"bdk_{credential_id}_{encoded}"


def is_credential_id(text: str) -> bool:
    """Whether ``text`` has the shape of a credential id (16 lowercase hex characters)."""
    return CREDENTIAL_ID.fullmatch(text) is not None


def token_id(token: str) -> str | None:
    """The credential id of a well-formed token, else None."""
    match = TOKEN_PATTERN.fullmatch(token)
    return match.group(1) if match else None


def bearer_token(header: str) -> str | None:
    """The token of an ``Authorization`` value (``Bearer`` in any letter case, one or more
    spaces), or None when the value is not that shape."""
    if len(header) > MAX_AUTHORIZATION:
        return None
    match = _BEARER.fullmatch(header.strip())
    if match is None:
        return None
    token = match.group(1)
    return token if token_id(token) is not None else None


def secret_hash(key: bytes, token: str) -> str:
    return hmac.new(key, token.encode(), hashlib.sha256).hexdigest()


def verify(key: bytes, token: str, recorded: str | None) -> bool:
    """Constant-time comparison of the token's keyed hash with the recorded one (the dummy
    hash when the id is unknown, which never matches)."""
    expected = recorded if recorded is not None else DUMMY_HASH
    matched = hmac.compare_digest(secret_hash(key, token).encode(), expected.encode())
    return matched and recorded is not None

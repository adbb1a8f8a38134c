"""Double-submit CSRF tokens: a random value signed with a key derived from the credential key,
set as an HttpOnly, SameSite=Lax cookie by every settings page and embedded in the page,
which sends it back in ``X-CSRF-Token``. A request passes when header and cookie are the same,
correctly signed token."""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets

COOKIE = "cs_csrf"
HEADER = "x-csrf-token"
_LABEL = b"context-service settings csrf v1"


def signing_key(credential_key: bytes) -> bytes:
    """A key of its own, so a CSRF token never says anything about credential hashes."""
    return hmac.new(credential_key, _LABEL, hashlib.sha256).digest()


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def _signature(key: bytes, nonce: str) -> str:
    return _b64(hmac.new(key, nonce.encode(), hashlib.sha256).digest())


def issue(key: bytes) -> str:
    nonce = _b64(secrets.token_bytes(32))
    return f"{nonce}.{_signature(key, nonce)}"


def valid(key: bytes, token: str | None) -> bool:
    if not token or token.count(".") != 1 or len(token) > 200:
        return False
    nonce, signature = token.split(".")
    return hmac.compare_digest(signature.encode(), _signature(key, nonce).encode())


def passes(key: bytes, header: str | None, cookie: str | None) -> bool:
    """The header repeats the cookie, and the cookie is a token this service signed."""
    if not header or not cookie:
        return False
    return hmac.compare_digest(header.encode(), cookie.encode()) and valid(key, cookie)

"""Tokens, keyed hashes and constant-time verification (agent-context-api.md §4.1, §4.4, §4.5)."""

from __future__ import annotations

import hmac
import re
import secrets
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from context_service.domain.agent_credentials import token as t

KEY = b"k" * 32


@given(st.binary(min_size=32, max_size=32), st.from_regex(r"[0-9a-f]{16}", fullmatch=True))
def test_tokens_have_the_documented_shape(secret: bytes, credential_id: str) -> None:
    token = t.format_token(credential_id, secret)
    assert re.fullmatch(r"bdk_[0-9a-f]{16}_[A-Za-z0-9_-]{43}", token)
    assert t.token_id(token) == credential_id
    assert t.bearer_token(f"Bearer {token}") == token


def test_bearer_parsing() -> None:
    token = t.format_token("0123456789abcdef", secrets.token_bytes(32))
    assert t.bearer_token(f"bEaReR    {token} ") == token
    for header in (token, f"Bearer\t{token}", f"Bearer {token} x", f"Bearer {token}=",
                   f"Basic {token}", "Bearer"):
        assert t.bearer_token(header) is None, header


def test_the_hash_is_keyed() -> None:
    token = t.format_token("0123456789abcdef", b"\0" * 32)
    assert t.secret_hash(KEY, token) == t.secret_hash(KEY, token)
    assert t.secret_hash(KEY, token) != t.secret_hash(b"j" * 32, token)
    assert re.fullmatch(r"[0-9a-f]{64}", t.secret_hash(KEY, token))


def test_verification_compares_in_constant_time(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[Any, Any]] = []
    real = hmac.compare_digest

    def spy(a: Any, b: Any) -> bool:
        calls.append((a, b))
        return real(a, b)

    monkeypatch.setattr(hmac, "compare_digest", spy)
    token = t.format_token("0123456789abcdef", secrets.token_bytes(32))
    recorded = t.secret_hash(KEY, token)
    assert t.verify(KEY, token, recorded)
    assert not t.verify(KEY, token[:-1] + ("A" if token[-1] != "A" else "B"), recorded)
    assert not t.verify(b"j" * 32, token, recorded)
    # an unknown id is compared against the dummy hash: same work, never a match
    assert not t.verify(KEY, token, None)
    assert len(calls) == 4
    assert calls[-1][1] == t.DUMMY_HASH.encode()
    assert all(len(a) == len(b) == 64 for a, b in calls)
    # even a secret whose hash happens to be the dummy would not pass for an unknown id
    monkeypatch.setattr(t, "secret_hash", lambda key, token: t.DUMMY_HASH)
    assert not t.verify(KEY, token, None)

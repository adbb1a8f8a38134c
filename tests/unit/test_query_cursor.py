"""Request checks (spec 2.4), the request fingerprint and the cursor (spec 5.4)."""

from __future__ import annotations

import base64
import hashlib
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from context_service.domain.errors import ContextInvalidError
from context_service.domain.query.cursor import decode_cursor, encode_cursor, fingerprint
from context_service.domain.query.request import QueryInput, plan

PREFIX = "invalid context resource: "


def _message(request: QueryInput) -> str:
    with pytest.raises(ContextInvalidError) as caught:
        plan(request)
    return caught.value.message.removeprefix(PREFIX)


def test_fingerprint_matches_the_spec_example() -> None:
    expected = hashlib.sha256(b'{"contexts":["memory"],"query":"release schedule"}')
    assert fingerprint(["memory"], [], [], [], [], "release schedule") == (
        expected.hexdigest()[:16])


def test_fingerprint_sorts_arrays_orders_keys_and_omits_empties() -> None:
    doc = (b'{"contexts":["a","b"],"types":["k","m"],"sourceContexts":["s"],'
           b'"revisions":["r"],"ids":["1","2","2"],"query":"q \xc3\xa9"}')
    got = fingerprint(["b", "a"], ["m", "k"], ["s"], ["r"], ["2", "1", "2"], "q \u00e9")
    assert got == hashlib.sha256(doc).hexdigest()[:16]
    assert fingerprint([], [], [], [], [], "") == hashlib.sha256(b"{}").hexdigest()[:16]


def test_cursor_is_unpadded_base64url_of_compact_json() -> None:
    token = encode_cursor(20, "0123456789abcdef")
    assert "=" not in token
    assert base64.urlsafe_b64decode(token + "==") == b'{"o":20,"q":"0123456789abcdef"}'


@given(st.integers(0, 2**64 - 1), st.text(max_size=20))
def test_cursor_round_trip(offset: int, key: str) -> None:
    assert decode_cursor(encode_cursor(offset, key), key) == offset


@given(st.text(max_size=60))
def test_only_cursors_written_by_the_service_decode(text: str) -> None:
    key = "0123456789abcdef"
    offset = decode_cursor(text, key)
    assert offset is None or text == encode_cursor(offset, key)


@given(st.integers(0, 2**40), st.binary(min_size=1, max_size=3), st.integers(0, 30))
def test_tampered_bytes_are_refused(offset: int, noise: bytes, where: int) -> None:
    key = "0123456789abcdef"
    raw = bytearray(base64.urlsafe_b64decode(encode_cursor(offset, key) + "=="))
    where %= len(raw)
    tampered = bytes(raw[:where]) + noise + bytes(raw[where + len(noise):])
    token = base64.urlsafe_b64encode(tampered).decode().rstrip("=")
    decoded = decode_cursor(token, key)
    assert decoded is None or tampered == bytes(raw) or decoded != offset


@pytest.mark.parametrize("token", [
    "%%", "abc=", "a", "e30", base64.urlsafe_b64encode(b'{"o":-1,"q":"k"}').decode(),
    base64.urlsafe_b64encode(b'{"q":"k"}').decode().rstrip("="),
    base64.urlsafe_b64encode(b'{"o":1}').decode().rstrip("="),
    base64.urlsafe_b64encode(b'{"q":"k","o":1}').decode().rstrip("="),
    base64.urlsafe_b64encode(b'{"o":12,"q":"k"}').decode(),  # padded
    base64.urlsafe_b64encode(b'{"o":1,"q":"k"} ').decode().rstrip("="),  # trailing space
    base64.urlsafe_b64encode(b'{"o":01,"q":"k"}').decode().rstrip("="),
    base64.urlsafe_b64encode(b'{"o":1.0,"q":"k"}').decode().rstrip("="),
    base64.urlsafe_b64encode(b'{"o":true,"q":"k"}').decode().rstrip("="),
])
def test_malformed_cursors(token: str) -> None:
    assert decode_cursor(token, "k") is None


def test_standard_base64_alphabet_is_not_base64url() -> None:
    key = ">>>?"
    standard = base64.b64encode(b'{"o":1,"q":">>>?"}').decode().rstrip("=")
    assert "+" in standard
    assert decode_cursor(standard, key) is None
    assert decode_cursor(encode_cursor(1, key), key) == 1


def test_plan_checks_in_order() -> None:
    assert _message(QueryInput(limit=-1, cursor="%")) == "query or ids is required"
    assert _message(QueryInput(query=" \t ", limit=-1)) == "query or ids is required"
    assert _message(QueryInput(query="x", limit=101, cursor="%")) == (
        "limit must be between 1 and 100")
    assert _message(QueryInput(query="x", limit=-5)) == "limit must be between 1 and 100"
    assert _message(QueryInput(query="x", cursor="%")) == "invalid query cursor"


def test_plan_defaults_and_terms() -> None:
    checked = plan(QueryInput(query="b a b"))
    assert (checked.limit, checked.offset) == (20, 0)
    assert checked.terms == (("a", 1), ("b", 2))
    assert plan(QueryInput(ids=("x",), limit=100)).terms == ()


def test_plan_accepts_a_cursor_of_the_same_request_with_another_limit() -> None:
    request = QueryInput(contexts=("b", "a"), query="x", limit=5)
    token = encode_cursor(5, request.fingerprint)
    same = QueryInput(contexts=("a", "b"), query="x", limit=50, cursor=token)
    assert plan(same).offset == 5
    changed = QueryInput(contexts=("a", "b"), query="x y", cursor=token)
    assert _message(changed) == "invalid query cursor"


def test_cursor_json_shape() -> None:
    token = encode_cursor(3, "k")
    assert json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))) == {
        "o": 3, "q": "k"}

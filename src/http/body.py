"""Strict request bodies, decoded with msgspec so the order of checks and messages are ours."""

from __future__ import annotations

import math
from datetime import datetime
from decimal import Decimal
from typing import Any, TypeVar

import msgspec

from context_service.contract.query import PublishQueryIndexRequest
from context_service.domain.echoed import LONGEST, cut
from context_service.domain.errors import RequestInvalidError
from context_service.domain.values import parse_timestamp
from context_service.http.limits import JSON_WHITESPACE, MAX_BODY

T = TypeVar("T")
# nesting as deep as the interpreter's recursion limit: far beyond any route's shape
NESTED = "malformed JSON body: nested too deeply"


def check_present(raw: bytes) -> None:
    if len(raw) > MAX_BODY:
        raise RequestInvalidError("request body too large")
    if not raw.strip(JSON_WHITESPACE):
        raise RequestInvalidError("request body is required")


def number(text: str) -> Any:
    """A JSON number with a fraction or an exponent where the shape names no type: a double,
    or, beyond every double (``1e400``), its decimal text (any JSON number decodes, agent api
    §1.4 rule 5). Whether a field takes it is that field's rule, with that field's message (a
    template ``number`` binds it; a studied ``number`` is a finite double, agent api 5.1 check
    8: ``field "<name>" has a value that does not match its type``)."""
    value = float(text)
    return value if math.isfinite(value) else Decimal(text)


# The bodies where a number beyond a double decodes, for the check of the field that takes it
# to refuse it with its own message: nothing of it is stored or shown back. Elsewhere (a query
# template's parameter default, which answers show back) it stays a body error: an answer
# holding it could not be read by a client that reads numbers as doubles, this project's own.
BEYOND_DOUBLE: frozenset[type] = frozenset({PublishQueryIndexRequest})
_DECODERS: dict[Any, msgspec.json.Decoder[Any]] = {
    shape: msgspec.json.Decoder(shape, strict=True, float_hook=number) for shape in BEYOND_DOUBLE}


def _decoder(shape: type[T]) -> msgspec.json.Decoder[T]:
    found = _DECODERS.get(shape)
    if found is None:
        found = _DECODERS[shape] = msgspec.json.Decoder(shape, strict=True)
    return found


def decode(raw: bytes, shape: type[T], refuse_nul: bool = False) -> T:
    """The body as ``shape``; with ``refuse_nul``, a string holding U+0000 is refused (for the
    routes whose views keep strings as PostgreSQL text and jsonb, which cannot hold it)."""
    check_present(raw)
    try:
        found = _decoder(shape).decode(raw)
        if refuse_nul and b"\\u0000" in raw:  # rare: only then look for it in the decoded strings
            _refuse_nul(msgspec.to_builtins(found))
    except msgspec.ValidationError as exc:
        raise RequestInvalidError(_message(str(exc))) from exc
    except msgspec.DecodeError as exc:
        raise RequestInvalidError(f"malformed JSON body: {exc}") from exc
    except RecursionError:  # the decoder's (or to_builtins') bound on nesting
        raise RequestInvalidError(NESTED) from None
    return found


# A step of the walk below: a key or an index, and the step it is under (None: the body).
_Step = tuple[str | int, "_Step | None"]


def _refuse_nul(value: object) -> None:
    """PostgreSQL text and jsonb cannot hold U+0000: a string with it would be logged but stop
    every view that stores it, so it is refused like a value of the wrong type. The walk keeps
    one step per level and writes a path only for the string it refuses, each key cut
    (decision 0059): a path written at every level held the keys of all the levels above it,
    and 800 nested keys of 1,200 characters (a 941 KiB body) held 369 MiB of paths."""
    pending: list[tuple[object, _Step | None]] = [(value, None)]
    while pending:
        item, at = pending.pop()
        if isinstance(item, str):
            if "\x00" in item:
                raise RequestInvalidError(f'strings cannot contain U+0000 at "{_path(at)}"')
        elif isinstance(item, dict):
            for key, inner in reversed(item.items()):  # popped in the body's order
                pending.append((inner, (key, at)))
                pending.append((key, at))  # a key is reported at its object's path
        elif isinstance(item, list):
            for index in range(len(item) - 1, -1, -1):
                pending.append((item[index], (index, at)))


def _path(at: _Step | None) -> str:
    """The JSON path of a step, each key cut and the whole at most LONGEST code points."""
    parts: list[str] = []
    while at is not None:
        step, at = at
        parts.append(f"[{step}]" if isinstance(step, int) else f".{cut(step)}")
    return cut("$" + "".join(reversed(parts)), LONGEST)


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


_UNKNOWN = "Object contains unknown field `"


def _message(text: str) -> str:
    # msgspec: "Object contains unknown field `foo` - at `$.workspace`"; the key is the caller's
    # (up to a mebibyte), shown cut (decision 0059)
    if text.startswith(_UNKNOWN) and text.endswith("`"):
        name, sep, path = text[len(_UNKNOWN):-1].rpartition("` - at `")
        if sep:
            text = f"{_UNKNOWN}{cut(name)}` - at `{cut(path, LONGEST)}`"
        else:
            text = f"{_UNKNOWN}{cut(path)}`"
    text = text.replace("`", '"')
    if text.startswith("Expected `object`") or text.startswith('Expected "object"'):
        return "request body must be a JSON object"
    return text[0].lower() + text[1:] if text else "invalid request body"

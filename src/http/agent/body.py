"""``/api/`` request bodies (agent-context-api.md §1.4): strict decoding (``400
INVALID_REQUEST``), then field rules collected as ``details`` (``400 VALIDATION_ERROR``), at
most one violation per path, the first rule that fails for it."""

from __future__ import annotations

import re
from typing import TypeVar

import msgspec

from context_service.http.agent.errors import ApiError, Violation

MAX_BODY = 1024 * 1024
T = TypeVar("T")


class ApiBody(msgspec.Struct, forbid_unknown_fields=True, rename="camel", kw_only=True):
    """Base of every ``/api/`` body: unknown keys rejected; ``None`` fields mean absent."""


def invalid(message: str) -> ApiError:
    return ApiError(400, "INVALID_REQUEST", message)


def decode(raw: bytes, shape: type[T]) -> T:
    if len(raw) > MAX_BODY:
        raise invalid("request body too large")
    if not raw.strip():
        raise invalid("request body is required")
    try:
        return msgspec.json.decode(raw, type=shape, strict=True)
    except msgspec.ValidationError as exc:
        raise invalid(_message(str(exc))) from exc
    except msgspec.DecodeError as exc:
        raise invalid(f"malformed JSON body: {exc}") from exc


_UNKNOWN = re.compile(r"Object contains unknown field `(.*)`(?: - at `(.*)`)?$", re.S)
_TYPE = re.compile(r"Expected `(.*?)`, got `(.*?)`(?: - at `(.*)`)?$", re.S)


def _message(text: str) -> str:
    """msgspec's wording turned into the contract's style: the problem, then the JSON path."""
    if match := _UNKNOWN.match(text):
        return f'unknown field "{match.group(1)}" at {match.group(2) or "$"}'
    if match := _TYPE.match(text):
        expected = match.group(1).replace(" | null", "")
        if match.group(3) is None and expected == "object":
            return "request body must be a JSON object"
        return f"expected {expected}, got {match.group(2)} at {match.group(3) or '$'}"
    return text[0].lower() + text[1:] if text else "invalid request body"


class Violations:
    """Field-rule failures in the order the route checks them; one per path."""

    def __init__(self) -> None:
        self.items: list[Violation] = []
        self._paths: set[str] = set()

    def add(self, path: str, message: str) -> None:
        if path not in self._paths:
            self._paths.add(path)
            self.items.append(Violation(path, message))

    def failed(self, path: str) -> bool:
        return path in self._paths

    def raise_if_any(self) -> None:
        if self.items:
            raise ApiError(400, "VALIDATION_ERROR", "request validation failed", self.items)


def blank(text: str) -> bool:
    return text.strip() == ""


def check_text(violations: Violations, path: str, value: str | None, limit: int,
               required: bool = True) -> None:
    """The common string rules: present, not blank, 1 to ``limit`` code points."""
    if value is None:
        if required:
            violations.add(path, "is required")
        return
    if blank(value):
        violations.add(path, "must not be blank")
    elif len(value) > limit:
        violations.add(path, f"must be 1 to {limit} characters")


def check_range(violations: Violations, path: str, value: int | None, low: int, high: int,
                required: bool = False) -> None:
    if value is None:
        if required:
            violations.add(path, "is required")
        return
    if not low <= value <= high:
        violations.add(path, f"must be between {low} and {high}")

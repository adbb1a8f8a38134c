"""``/api/`` request bodies (agent-context-api.md §1.4): strict decoding (``400
INVALID_REQUEST``), then field rules collected as ``details`` (``400 VALIDATION_ERROR``), at
most one violation per path, the first rule that fails for it."""

from __future__ import annotations

from typing import Any, TypeVar

import msgspec

from context_service.domain.echoed import LONGEST, cut
from context_service.http.agent.errors import ApiError, Violation
from context_service.http.agent.late_body import PendingBody
from context_service.http.body import NESTED, number
from context_service.http.limits import JSON_WHITESPACE, MAX_BODY

T = TypeVar("T")
# A refusal's size is its own, not the body's (decision 0059): at most MAX_LISTED violations in
# ``details`` (then one entry counting the rest), each path and message at most LONGEST code
# points (only a caller's key or name reaches it).
MAX_LISTED = 100


class ApiBody(msgspec.Struct, forbid_unknown_fields=True, rename="camel", kw_only=True):
    """Base of every ``/api/`` body: unknown keys rejected; ``None`` fields mean absent."""


def invalid(message: str) -> ApiError:
    return ApiError(400, "INVALID_REQUEST", message)


_DECODERS: dict[Any, msgspec.json.Decoder[Any]] = {}


def _decoder(shape: type[T]) -> msgspec.json.Decoder[T]:
    found = _DECODERS.get(shape)
    if found is None:
        found = _DECODERS[shape] = msgspec.json.Decoder(shape, strict=True, float_hook=number)
    return found


def decode(body: bytes | PendingBody, shape: type[T]) -> T:
    """The body as ``shape``; a pending body is read here, after the route's pipeline."""
    raw = body.read() if isinstance(body, PendingBody) else body
    if len(raw) > MAX_BODY:
        raise invalid("request body too large")
    if not raw.strip(JSON_WHITESPACE):
        raise invalid("request body is required")
    try:
        return _decoder(shape).decode(raw)
    except msgspec.ValidationError as exc:
        raise invalid(_message(str(exc))) from exc
    except msgspec.DecodeError as exc:
        raise invalid(f"malformed JSON body: {exc}") from exc
    except RecursionError:  # the decoder's bound on nesting, far beyond any route's shape
        raise invalid(NESTED) from None


# msgspec's messages, taken apart with string operations: the unknown key is the caller's (up to
# a mebibyte), and a pattern with two greedy groups around a backtick took quadratic time on it.
_UNKNOWN = "Object contains unknown field `"
_TYPE = "Expected `"
_GOT = "`, got `"
_AT = " - at `"


def _at(tail: str) -> tuple[str, str | None]:
    """``text`` and the path of ``text - at `path```, or the whole and None (the last wins)."""
    head, sep, path = tail.rpartition(_AT)
    if sep and path.endswith("`"):
        return head, path[:-1]
    return tail, None


def _message(text: str) -> str:
    """msgspec's wording turned into the contract's style: the problem, then the JSON path."""
    if text.startswith(_UNKNOWN) and text.endswith("`"):
        name, path = _at(text[len(_UNKNOWN):])
        if path is not None and name.endswith("`"):
            return f'unknown field "{cut(name[:-1])}" at {cut(path, LONGEST)}'
        return f'unknown field "{cut(text[len(_UNKNOWN):-1])}" at $'
    if text.startswith(_TYPE) and _GOT in text:
        expected, _, rest = text[len(_TYPE):].partition(_GOT)
        got, tick, tail = rest.partition("`")
        path = _at(tail)[1] if tail else None
        if tick and (not tail or path is not None):
            expected = expected.replace(" | null", "")
            if path is None and expected == "object":
                return "request body must be a JSON object"
            return f"expected {expected}, got {got} at {path or '$'}"
    return text[0].lower() + text[1:] if text else "invalid request body"


class Violations:
    """Field-rule failures in the order the route checks them; one per path. The first
    ``MAX_LISTED`` are kept, the rest only counted: a body of a mebibyte can hold a quarter of a
    million invalid entries, and listing each made an answer of 26 MB (decision 0059). A route
    checks a path's rules one after another, so a path repeated past the cap is the last one."""

    def __init__(self) -> None:
        self.items: list[Violation] = []
        self.left_out = 0
        self._paths: set[str] = set()  # of the listed ones: at most MAX_LISTED
        self._last = ""

    def add(self, path: str, message: str) -> None:
        if path in self._paths or path == self._last:
            return
        self._last = path
        if len(self.items) < MAX_LISTED:
            self._paths.add(path)
            self.items.append(Violation(cut(path, LONGEST), cut(message, LONGEST)))
        else:
            self.left_out += 1

    def details(self) -> list[Violation]:
        """The listed violations and, when some were left out, an entry saying how many."""
        if not self.left_out:
            return list(self.items)
        return [*self.items, Violation("$", left_out(self.left_out))]

    def raise_if_any(self) -> None:
        if self.items:
            raise ApiError(400, "VALIDATION_ERROR", "request validation failed", self.details())


def left_out(count: int) -> str:
    return f"{count} more violation{'' if count == 1 else 's'} not listed"


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

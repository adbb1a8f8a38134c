"""The caller's identity from ``X-Context-Subject`` (spec 1.1.5)."""

from __future__ import annotations

from context_service.domain.errors import RequestInvalidError
from context_service.domain.events import ANONYMOUS, SUBJECT_KINDS, Subject
from context_service.http.errors import HttpError

HEADER = "x-context-subject"
MALFORMED = "X-Context-Subject must be kind:name with kind user, agent, workload or service"


def parse_subject(raw: str | None, require: bool) -> Subject:
    value = (raw or "").strip()
    if not value:
        if require:
            raise HttpError(401, "unauthenticated", "X-Context-Subject is required")
        return ANONYMOUS
    kind, sep, name = value.partition(":")
    if not sep or not kind.strip() or not name.strip() or kind not in SUBJECT_KINDS:
        raise RequestInvalidError(MALFORMED)
    return Subject(kind, name)

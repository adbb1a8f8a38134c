"""Imperatives for query templates; content arrives decoded, validated by ``decide``."""

from __future__ import annotations

from collections.abc import Callable

import msgspec

from context_service.domain.events import Subject
from context_service.domain.query_template.events import Parameter


class TemplateDraft(msgspec.Struct, frozen=True, kw_only=True):
    description: str = ""
    sql: str = ""
    parameters: tuple[Parameter, ...] = ()
    max_rows: int = 100
    timeout_ms: int = 5000


class QueryTemplateCommand(msgspec.Struct, frozen=True, kw_only=True):
    actor: Subject
    template_id: str


# The database check of spec 11.2 rule 9: the rewritten statement and its parameters in, the
# database's refusal (a message) or None out. Supplied by the caller (an adapter).
DatabaseCheck = Callable[[str, tuple[Parameter, ...]], str | None]


class RegisterQueryTemplate(QueryTemplateCommand, frozen=True):
    draft: TemplateDraft
    check: DatabaseCheck


class ReplaceQueryTemplate(QueryTemplateCommand, frozen=True):
    draft: TemplateDraft
    check: DatabaseCheck
    body_id: str | None = None


class RetireQueryTemplate(QueryTemplateCommand, frozen=True):
    pass

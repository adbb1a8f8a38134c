"""Facts about a context set (spec 6, 12.2). Names are stable stored topics; the data fields are
the spec's, snake_case, in its order (``at`` and ``actor`` of every event follow them)."""

from __future__ import annotations

import msgspec

from context_service.domain.events import Event


class VerifiedAnswer(msgspec.Struct, frozen=True, kw_only=True):
    id: str = ""
    question: str = ""
    answer: str = ""
    citations: tuple[str, ...] = ()  # record references <collection>/<recordId>


class Definition(msgspec.Struct, frozen=True, kw_only=True):
    term: str = ""
    definition: str = ""
    aliases: tuple[str, ...] = ()


class Instruction(msgspec.Struct, frozen=True, kw_only=True):
    id: str = ""
    text: str = ""


class RequiredEvidence(msgspec.Struct, frozen=True, kw_only=True):
    id: str = ""
    description: str = ""
    query: str = ""


class ContextSetVersion(Event, frozen=True):
    """The whole content of one version of a set (the data of both events below)."""

    id: str
    version: int
    name: str
    description: str
    collections: tuple[str, ...]
    verified_answers: tuple[VerifiedAnswer, ...]
    definitions: tuple[Definition, ...]
    instructions: tuple[Instruction, ...]
    required_evidence: tuple[RequiredEvidence, ...]
    query_templates: tuple[str, ...]


class ContextSetCreated(ContextSetVersion, frozen=True, tag="ContextSetCreated"):
    """Version 1."""


class ContextSetReplaced(ContextSetVersion, frozen=True, tag="ContextSetReplaced"):
    """A new version: the whole content, replacing the previous version's."""


class ContextSetArchived(Event, frozen=True, tag="ContextSetArchived"):
    """Final: the set keeps its id and last version but is no longer served."""

    id: str
    version: int


CONTEXT_SET_EVENTS: tuple[type[Event], ...] = (ContextSetCreated, ContextSetReplaced,
                                               ContextSetArchived)

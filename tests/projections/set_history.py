"""Generated context-set histories written through the real application: creates, replacements
(some identical, some refused) and archives over a few ids and namespaces, with texts that
PostgreSQL text and jsonb cannot hold as such (NUL) mixed in."""

from __future__ import annotations

import random

from context_service.adapters.eventstore.context_sets import ContextSetApplication
from context_service.domain.context_set.commands import (
    ArchiveContextSet,
    ContextSetCommand,
    CreateContextSet,
    Draft,
    ReplaceContextSet,
)
from context_service.domain.context_set.events import Definition, Instruction, VerifiedAnswer
from context_service.domain.errors import DomainError
from context_service.domain.events import ADMIN, Subject

NAMESPACES = ["ns", "other", "odd\x00ns"]
IDS = ["finance", "hr", "legal"]
ACTORS = [Subject("user", "alice"), ADMIN]
TEXTS = ["Finance", "Who is our CFO?", "nul \x00 inside", "Zürich office", "ARR"]


def random_draft(rng: random.Random) -> Draft:
    collections = tuple(rng.sample(["alpha", "beta", "gamma"], rng.randrange(0, 4)))
    answers = tuple(
        VerifiedAnswer(id=f"a{i}", question=rng.choice(TEXTS), answer=rng.choice(TEXTS),
                       citations=(f"{collections[0]}/r{i}",) if collections else ())
        for i in range(rng.randrange(0, 3)))
    return Draft(name=rng.choice(TEXTS), description=rng.choice(["", *TEXTS]),
                 collections=collections, verified_answers=answers,
                 definitions=(Definition(term=rng.choice(["ARR", "Churn"]), definition="d"),),
                 instructions=(Instruction(id="cite", text=rng.choice(TEXTS)),))


def random_command(rng: random.Random, set_id: str) -> ContextSetCommand:
    actor = rng.choice(ACTORS)
    pick = rng.randrange(6)
    if pick <= 1:
        return CreateContextSet(actor=actor, set_id=set_id, draft=random_draft(rng))
    if pick <= 4:
        return ReplaceContextSet(actor=actor, set_id=set_id, draft=random_draft(rng))
    return ArchiveContextSet(actor=actor, set_id=set_id)


def write_set_history(app: ContextSetApplication, seed: int, steps: int) -> int:
    """Write ``steps`` commands; return how many produced events."""
    rng = random.Random(seed)
    written = 0
    for _ in range(steps):
        namespace, set_id = rng.choice(NAMESPACES), rng.choice(IDS)
        try:
            outcome = app.execute(namespace, random_command(rng, set_id))
        except DomainError:
            continue
        written += outcome.position > 0
    return written

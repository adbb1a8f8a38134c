"""Generated histories of workspace memberships and agent credentials, written through the real
applications (refusals skipped), so the access views see what production produces."""

from __future__ import annotations

import random

from context_service.bootstrap import Container
from context_service.domain.agent_credentials.commands import CreateCredential, RevokeCredential
from context_service.domain.errors import DomainError
from context_service.domain.events import ADMIN, Subject
from context_service.domain.workspace.commands import RemoveMember, SetMember
from context_service.domain.workspace.roles import ROLES

PEOPLE = [Subject("user", n) for n in ("alice", "bob", "carol", "dave")] + [ADMIN]
WORKSPACES = ["ns", "other"]


def write_access_history(container: Container, seed: int, steps: int) -> int:
    rng = random.Random(seed)
    written = 0
    ids: list[tuple[str, str]] = []
    for step in range(steps):
        ws = rng.choice(WORKSPACES)
        actor, subject = rng.choice(PEOPLE), rng.choice(PEOPLE[:-1])
        pick = rng.randrange(5)
        try:
            if pick <= 1:
                outcome = container.workspaces.execute(
                    ws, SetMember(actor=actor, subject=subject, role=rng.choice(ROLES)))
            elif pick == 2:
                outcome = container.workspaces.execute(ws, RemoveMember(actor=actor,
                                                                        subject=subject))
            elif pick == 3 or not ids:
                credential_id = f"{seed:08x}{step:08x}"
                outcome = container.credentials.execute(ws, CreateCredential(
                    actor=actor, credential_id=credential_id, name=f"agent {step}",
                    scopes=("context:read",), context_set_id="", expires_in_days=30,
                    secret_hash=f"{rng.getrandbits(256):064x}"))
                ids.append((ws, credential_id))
            else:
                ws, credential_id = rng.choice(ids)
                outcome = container.credentials.execute(ws, RevokeCredential(
                    actor=actor, credential_id=credential_id))
        except DomainError:
            continue
        written += 1 if outcome.position else 0
    return written

"""Rule 5 at a time-travel point for every credential (agent-context-api.md §3.4, §7.3): a
name a member took again after a non-member's collection of that name was deleted is read now
by the member's readers, but a pack back to when the non-member's lived must not carry its
text (the administrator's packs were kept from it; a member's were not)."""

from __future__ import annotations

import pytest

from tests.api.agent.packs_support import Agent, create_context, grant, publish, record
from tests.api.agent.packs_support import module_settings as module_settings  # the fixture
from tests.api.agent.test_member_collections import (
    INJECTION,
    PLANTED,
    READER,
    STRANGER,
    at,
    back_to,
    delete,
    pack,
)
from tests.api.agent.test_member_collections import planted as planted  # the fixture
from tests.api.namespaced import Namespaced
from tests.api.sets_namespaced import token

pytestmark = [pytest.mark.postgres, pytest.mark.shared_service]
BENIGN_REV = "6" * 64


def test_a_members_time_travel_reads_the_generation_that_lived_then_not_the_name(
        planted: Namespaced) -> None:
    agent = Agent(planted, token(planted, creator=READER))
    then = at(planted, agent)
    delete(planted, PLANTED, STRANGER)
    create_context(planted, PLANTED, ws=planted.ns)  # alice's now
    publish(planted, PLANTED, BENIGN_REV,
            [record("note", PLANTED, BENIGN_REV, "Nothing to wire.")], ws=planted.ns)
    grant(planted, PLANTED, READER, "read", ws=planted.ns)
    assert pack(agent, filters={"collectionIds": [PLANTED]}).status_code == 200  # now: hers
    past = pack(agent, **back_to(then))
    assert past.status_code == 200, past.text
    assert INJECTION not in past.text
    named = pack(agent, filters={"collectionIds": [PLANTED]}, **back_to(then))
    assert named.status_code == 404, named.text

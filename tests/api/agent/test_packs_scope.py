"""Packs within context sets, in time and under the deadline (agent-context-api.md §3.5, §7.3,
§7.5, §7.8, §7.9, §7.13): approved set items first, a bound credential packing in its set, an
archived bound set packing without one, ``asOf.systemTime`` reading the log as it was, and the
administrator alone reading a deleted context in the past. Each test packs from a workspace of
its own; the deadline, revocation-before-release and NATS tests are in
test_packs_scope_service_wide.py."""

from __future__ import annotations

import time

import pytest

from tests.api.agent.packs_corpus import FACTS, facts_records, pack_body, seed_corpus_of
from tests.api.agent.packs_support import PACKS, Agent, publish
from tests.api.agent.packs_support import module_settings as module_settings  # the fixture
from tests.api.conftest import Api
from tests.api.namespaced import Namespaced, namespaced
from tests.api.sets_namespaced import archive_set, create_set, token
from tests.api.sets_support import CFO_ANSWER

# one service for the module: every test's workspace is a namespace of its own
pytestmark = [pytest.mark.postgres, pytest.mark.shared_service]
FINANCE = {"collections": [FACTS], "verifiedAnswers": [CFO_ANSWER],
           "definitions": [{"term": "CFO", "definition": "the executive responsible for "
                            "Acme's finances.", "aliases": ["Chief Financial Officer"]}],
           "instructions": [{"id": "cite", "text": "Cite the record id of every fact."}],
           "requiredEvidence": [{"id": "appointment", "description": "CFO appointment",
                                 "query": "CFO appointment"}]}
CLASSES = ["verified_answers", "definitions", "instructions", "required_evidence", "evidence",
           "whole_document"]


@pytest.fixture
def corpus(api: Api) -> Namespaced:
    """A workspace of the test's own with the pack corpus."""
    workspace = namespaced(api, "acme")
    seed_corpus_of(workspace)
    return workspace


def test_a_set_pack_puts_approved_items_first_in_class_order(corpus: Namespaced) -> None:
    create_set(corpus, "finance", **FINANCE)
    for agent in (Agent(corpus, token(corpus)),
                  Agent(corpus, token(corpus, context_set_id="finance"))):
        body = agent.pack(pack_body(contextSetId="finance")).json()
        items = body["items"]
        assert [i["id"] for i in items[:3]] == ["set:finance/answer/current-cfo",
                                                 "set:finance/definition/CFO",
                                                 "set:finance/instruction/cite"]
        assert all(i["trust"] == "approved" and "validity" not in i for i in items[:3])
        assert all(i["trust"] == "untrusted" for i in items[3:])
        ranks = [CLASSES.index(i["class"]) for i in items]
        assert ranks == sorted(ranks)
        required = [i for i in items if i["class"] == "required_evidence"]
        assert required and all(i["requirementIds"] == ["appointment"] for i in required)
        assert items[0]["source"] == {"kind": "context_set", "contextSetId": "finance",
                                      "contextSetVersion": 1}
        assert body["complete"] is True and body["missing"] == []


def test_a_bound_credential_packs_in_its_set_until_it_is_archived(corpus: Namespaced) -> None:
    create_set(corpus, "finance", **FINANCE)
    bound = Agent(corpus, token(corpus, context_set_id="finance"))
    within = bound.pack(pack_body()).json()
    assert within["items"][0]["id"] == "set:finance/answer/current-cfo"
    assert all(i["source"].get("collectionId") in (None, FACTS) for i in within["items"])
    archive_set(corpus, "finance")
    after = bound.pack(pack_body()).json()
    assert after["items"] and not any(i["id"].startswith("set:") for i in after["items"])
    # the archived set's last collections stay its limit: notes is never read
    assert all(i["source"].get("collectionId") == FACTS for i in after["items"])


def test_system_time_reads_the_log_as_it_was(corpus: Namespaced) -> None:
    agent = Agent(corpus, token(corpus))
    before = agent.pack(pack_body()).json()
    time.sleep(1.1)  # recorded times are the clock's: leave a second between the two states
    changed = "Acme appointed Priya Raman as CFO, effective 1 July 2024."
    publish(corpus, FACTS, "7" * 64, facts_records(changed, "7" * 64), ws=corpus.ns)
    now = agent.pack(pack_body()).json()
    past = agent.pack(pack_body(asOf={"validTime": "2025-01-01T00:00:00Z",
                                      "systemTime": before["asOf"]["systemTime"]})).json()
    assert now["asOf"]["position"] > before["asOf"]["position"]
    assert past["asOf"] == before["asOf"]
    assert past["items"] == before["items"] and past["receipt"] == before["receipt"]
    text = {i["id"]: i["text"] for i in now["items"]}
    assert text["psg:company-facts/cfo-2024"] == changed
    epoch = agent.pack(pack_body(asOf={"systemTime": "2000-01-01T00:00:00Z"})).json()
    assert epoch["asOf"]["position"] == 0 and epoch["items"] == []


def test_time_travel_never_resurrects_access_except_the_administrators(corpus: Namespaced) -> None:
    """A context deleted since ``systemTime`` is not readable now — except by the bootstrap
    administrator, who reads deleted contexts too (§3.4 rule 2)."""
    alice = Agent(corpus, token(corpus))
    admin = Agent(corpus, token(corpus, creator="service:context-service-admin"))
    before = alice.pack(pack_body()).json()
    assert any(i["source"].get("collectionId") == FACTS for i in before["items"])
    time.sleep(1.1)
    resp = corpus.as_("user:alice").delete(f"/v1/namespaces/{corpus.ns}/contexts/{FACTS}")
    assert resp.status_code == 204, resp.text
    past = pack_body(asOf={"validTime": "2025-01-01T00:00:00Z",
                           "systemTime": before["asOf"]["systemTime"]})
    mine = alice.pack(past).json()
    assert mine["asOf"] == before["asOf"]
    assert not any(i["source"].get("collectionId") == FACTS for i in mine["items"])
    assert alice.post(PACKS, {**past, "filters": {"collectionIds": [FACTS]}}).status_code == 404
    admins = admin.pack(past).json()
    assert [i for i in admins["items"] if i["source"].get("collectionId") == FACTS] == [
        i for i in before["items"] if i["source"].get("collectionId") == FACTS]

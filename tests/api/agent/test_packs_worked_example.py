"""The spec's CFO worked example end to end through HTTP (agent-context-api.md §7.15): records
published with validity, supersession and fact keys through ``PUT .../query-index``; the current
CFO's passage first among the evidence and valid, the former CFO's expired and superseded, the
contradiction flagged, and ``asOf.validTime`` moving the answer. With the spec's records, time
and request, the items' hashes are the spec's; their order is pack-engine/2's (the spec's
example shows engine 1's).

One service for the module: the workspace and its records are written once, and both tests only
ask for packs."""

from __future__ import annotations

from typing import Any

import pytest

from tests.api.agent.packs_support import Agent, create_context, publish, record
from tests.api.agent.packs_support import module_settings as module_settings  # the fixture
from tests.api.conftest import Api
from tests.api.sets_support import seed_workspace, token

pytestmark = [pytest.mark.postgres, pytest.mark.shared_service]
FACTS = "company-facts"
REV = "4f1c2a9b0d3e5f607182a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f8"
TASK = "Who is the current CFO, and since when?"
# the spec's hashes of the released items (§7.15), independent of position and revision
HASHES = {
    "psg:company-facts/cfo-2024":
        "sha256:7b6e16861e49fe6d1473ff5befa1063a39f3345a43ea6f84a70786a0326ae918",
    "psg:company-facts/org-chart-finance":
        "sha256:7930c1e35ab564e1fd9c28a60c8a4dbbac3ed76c7b3f0035b87e7997166187a3",
    "psg:company-facts/cfo-2021":
        "sha256:61475e2c5af5691f9b90a97a8797c3a5a00ceb67e21515d0d7ab8bef62f94bee",
    "psg:company-facts/cfo-2025":
        "sha256:2ddca63752ec5629ef97c1351fe1f490aa87e99c166c5648776a293e1f96d46c",
    "doc:company-facts/newsletters/2024-07.md":
        "sha256:7a8910c5181164bc6a4932dc561f36287af26ff1de1b1c1350f1605cf6b0a7bf",
}


def cfo_records() -> list[dict[str, Any]]:
    def r(id_: str, text: str, file: str, **extra: Any) -> dict[str, Any]:
        return record(id_, FACTS, REV, text, file=file, **extra)

    return [
        r("cfo-2021", "Dana Lee was appointed CFO of Acme on 1 March 2021.",
          "press/2021-03-cfo.md", title="CFO appointment 2021",
          validFrom="2021-03-01T00:00:00Z", validTo="2024-07-01T00:00:00Z", factKey="acme.cfo"),
        r("cfo-2024", "Acme appointed Priya Raman as CFO effective 1 July 2024, succeeding "
          "Dana Lee.", "press/2024-06-cfo.md", title="CFO appointment 2024",
          validFrom="2024-07-01T00:00:00Z", supersedes=["cfo-2021"], factKey="acme.cfo"),
        r("cfo-2025", "Tom Okafor becomes CFO of Acme on 1 March 2025, succeeding Priya Raman.",
          "press/2025-02-cfo.md", title="CFO handover 2025",
          validFrom="2025-03-01T00:00:00Z", supersedes=["cfo-2024"], factKey="acme.cfo"),
        r("org-chart-finance", "Interim CFO: Marco Silva (from 1 July 2024).", "org/chart.md",
          title="Finance org chart", validFrom="2024-07-01T00:00:00Z", factKey="acme.cfo"),
        r("news-2024-07-a", "Acme appointed Priya Raman as CFO effective 1 July 2024, "
          "succeeding Dana Lee, Acme said.", "newsletters/2024-07.md"),
        r("news-2024-07-b", "Acme opened a new office in Lisbon in June 2024.",
          "newsletters/2024-07.md"),
        r("canteen", "Canteen: vegetarian lunch every Friday.", "facilities/canteen.md"),
    ]


@pytest.fixture(scope="module")
def alice(module_api: Api) -> Agent:
    api = module_api
    seed_workspace(api)
    create_context(api, FACTS)
    publish(api, FACTS, REV, cfo_records())
    return Agent(api, token(api))


def _pack(agent: Agent, valid_time: str) -> dict[str, Any]:
    body: dict[str, Any] = agent.pack({"task": TASK, "budget": {"maxTokens": 2000},
                                       "asOf": {"validTime": valid_time}}).json()
    return body


def test_the_current_cfo_comes_first_and_history_is_flagged(alice: Agent) -> None:
    body = _pack(alice, "2025-01-01T00:00:00Z")
    items = {i["id"]: i for i in body["items"]}
    passages = [i["id"] for i in body["items"] if i["id"].startswith("psg:")]
    # engine 2 with the bundled model's cosines: the two valid, contradicting statements first
    # (the current CFO's, then the org chart, whose cosine is the collection's highest but
    # weighs 0.35), the newsletter's second record after its first (absorbed by cfo-2024); the
    # canteen, unrelated, is no candidate (no lexical score, a cosine less than a deviation
    # above the mean); tier-1 records last
    assert passages == ["psg:company-facts/cfo-2024", "psg:company-facts/org-chart-finance",
                        "psg:company-facts/news-2024-07-b", "psg:company-facts/cfo-2021",
                        "psg:company-facts/cfo-2025"]
    assert body["items"][0]["id"] == "psg:company-facts/cfo-2024"
    current = items["psg:company-facts/cfo-2024"]
    assert current["validity"] == {"validFrom": "2024-07-01T00:00:00Z", "status": "valid"}
    assert current["superseded"] is False and current["contradiction"] is True
    assert current["contradicts"] == ["company-facts/org-chart-finance"]
    assert current["absorbed"] == ["psg:company-facts/news-2024-07-a"]
    former = items["psg:company-facts/cfo-2021"]
    assert former["validity"]["status"] == "expired" and former["superseded"] is True
    assert former["supersededBy"] == ["company-facts/cfo-2024"]
    assert items["psg:company-facts/cfo-2025"]["validity"]["status"] == "not_yet_valid"
    assert body["omitted"]["duplicate"] == {"count": 1,
                                            "ids": ["psg:company-facts/news-2024-07-a"]}
    # the revision was published without provenance here: no derived_from fact (60 tokens)
    assert [i["class"] for i in body["items"]] == ["evidence"] * 7
    assert body["budget"]["usedTokens"] == 314 and body["complete"] is True
    for item_id, expected in HASHES.items():
        if item_id.startswith("psg:"):  # engine 2 offers no whole document here
            assert items[item_id]["hash"] == expected, item_id


def test_the_valid_time_moves_the_answer(alice: Agent) -> None:
    body = _pack(alice, "2025-04-01T00:00:00Z")
    items = {i["id"]: i for i in body["items"]}
    assert body["items"][0]["id"] == "psg:company-facts/cfo-2025"
    assert items["psg:company-facts/cfo-2025"]["validity"]["status"] == "valid"
    # superseded now (tier 1), cfo-2024 comes after the newsletter that repeats it, which
    # absorbs it
    assert "psg:company-facts/cfo-2024" not in items
    assert items["psg:company-facts/news-2024-07-a"]["absorbed"] == [
        "psg:company-facts/cfo-2024"]
    assert items["psg:company-facts/org-chart-finance"]["contradicts"] == [
        "company-facts/cfo-2025"]

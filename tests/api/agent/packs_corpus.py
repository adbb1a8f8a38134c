"""A small workspace for the pack and replay API tests: ``acme`` with one member per role,
the knowledge context ``company-facts`` (alice's, readable by adam) with a CFO history, and the
memory context ``notes`` (alice's only), each with a published index."""

from __future__ import annotations

from typing import Any

from tests.api.agent.packs_support import create_context, grant, publish, record
from tests.api.conftest import Api
from tests.api.namespaced import Namespaced
from tests.api.sets_namespaced import seed_workspace as seed_namespaced
from tests.api.sets_support import seed_workspace

FACTS, NOTES = "company-facts", "notes"
FACTS_REV = "4f1c2a9b0d3e5f607182a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f8"
NOTES_REV = "9a8b7c6d5e4f30211f0e1d2c3b4a59687766554433221100ffeeddccbbaa9988"
TASK = "Who is the current CFO, and since when?"
VALID = "2025-01-01T00:00:00Z"


def facts_records(cfo_2024: str = "Acme appointed Priya Raman as CFO effective 1 July 2024, "
                                  "succeeding Dana Lee.",
                  r: str = FACTS_REV) -> list[dict[str, Any]]:
    return [
        record("cfo-2021", FACTS, r, "Dana Lee was appointed CFO of Acme on 1 March 2021.",
               title="CFO appointment 2021", file="press/2021-03-cfo.md"),
        record("cfo-2024", FACTS, r, cfo_2024, title="CFO appointment 2024",
               file="press/2024-06-cfo.md"),
        record("org-chart-finance", FACTS, r, "Interim CFO: Marco Silva (from 1 July 2024).",
               title="Finance org chart", file="org/chart.md"),
        record("news-2024-07-b", FACTS, r, "Acme opened a new office in Lisbon in June 2024.",
               file="newsletters/2024-07.md"),
        record("canteen", FACTS, r, "Canteen: vegetarian lunch every Friday.",
               file="facilities/canteen.md"),
    ]


def notes_records() -> list[dict[str, Any]]:
    return [record("n1", NOTES, NOTES_REV, "The CFO prefers quarterly board summaries.",
                   type_="memory"),
            record("n2", NOTES, NOTES_REV, "Parking permits renew in January.", type_="memory")]


def seed_corpus(api: Api) -> None:
    seed_workspace(api)
    create_context(api, FACTS)
    publish(api, FACTS, FACTS_REV, facts_records())
    grant(api, FACTS, "user:adam", "read")
    create_context(api, NOTES, "memory")
    publish(api, NOTES, NOTES_REV, notes_records())


def pack_body(**extra: Any) -> dict[str, Any]:
    return {"task": TASK, "budget": {"maxTokens": 2000}, "asOf": {"validTime": VALID}, **extra}


def seed_corpus_of(api: Namespaced) -> None:
    """``seed_corpus`` in ``api``'s workspace of its own (``api.ns``) instead of ``acme``."""
    ws = api.ns
    seed_namespaced(api)
    create_context(api, FACTS, ws=ws)
    publish(api, FACTS, FACTS_REV, facts_records(), ws=ws)
    grant(api, FACTS, "user:adam", "read", ws=ws)
    create_context(api, NOTES, "memory", ws=ws)
    publish(api, NOTES, NOTES_REV, notes_records(), ws=ws)

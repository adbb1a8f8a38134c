"""The worked example of agent-context-api §7.15 as engine inputs: the `company-facts` index, the
example's cosines and token counts, and the `finance` context set."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

from context_service.adapters.pack.hybrid_features import stem_words
from context_service.domain.context.events import QueryRecord, SourceRef
from context_service.domain.context_set.events import (
    Definition,
    Instruction,
    RequiredEvidence,
    VerifiedAnswer,
)
from context_service.domain.context_set.state import ContextSetState
from context_service.domain.pack.model import CollectionAt, CollectionCorpus, NamespaceAt
from context_service.domain.pack.retrieval2.reference import ReferenceHybrid

REV = "4f1c2a9b0d3e5f607182a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f8"
SOURCE_REV = "9a8b7c6d5e4f30211f0e1d2c3b4a59687766554433221100ffeeddccbbaa9988"
TASK = "Who is the current CFO, and since when?"
SYSTEM_TIME = datetime(2025, 6, 12, 9, 30, tzinfo=UTC)
RECORDED_AT = datetime(2025, 6, 12, 10, 15, 30, tzinfo=UTC)
EXPIRES_AT = datetime(2025, 7, 12, 10, 15, 30, tzinfo=UTC)
CREDENTIAL = "3f9a1c0b7d2e4a68"


def ts(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def record(id_: str, text: str, file: str, title: str = "", valid_from: str = "",
           valid_to: str = "", supersedes: tuple[str, ...] = (),
           fact_key: str = "") -> QueryRecord:
    return QueryRecord(id=id_, context="company-facts", type="knowledge", revision=REV,
                       text=text, title=title, source=SourceRef("company-facts", "knowledge", REV),
                       file=file, valid_from=ts(valid_from) if valid_from else None,
                       valid_to=ts(valid_to) if valid_to else None, supersedes=supersedes,
                       fact_key=fact_key)


RECORDS = (
    record("cfo-2021", "Dana Lee was appointed CFO of Acme on 1 March 2021.",
           "press/2021-03-cfo.md", "CFO appointment 2021", "2021-03-01T00:00:00Z",
           "2024-07-01T00:00:00Z", fact_key="acme.cfo"),
    record("cfo-2024", "Acme appointed Priya Raman as CFO effective 1 July 2024, succeeding "
           "Dana Lee.", "press/2024-06-cfo.md", "CFO appointment 2024",
           "2024-07-01T00:00:00Z", supersedes=("cfo-2021",), fact_key="acme.cfo"),
    record("cfo-2025", "Tom Okafor becomes CFO of Acme on 1 March 2025, succeeding Priya Raman.",
           "press/2025-02-cfo.md", "CFO handover 2025", "2025-03-01T00:00:00Z",
           supersedes=("cfo-2024",), fact_key="acme.cfo"),
    record("org-chart-finance", "Interim CFO: Marco Silva (from 1 July 2024).", "org/chart.md",
           "Finance org chart", "2024-07-01T00:00:00Z", fact_key="acme.cfo"),
    record("news-2024-07-a", "Acme appointed Priya Raman as CFO effective 1 July 2024, "
           "succeeding Dana Lee, Acme said.", "newsletters/2024-07.md"),
    record("news-2024-07-b", "Acme opened a new office in Lisbon in June 2024.",
           "newsletters/2024-07.md"),
    record("canteen", "Canteen: vegetarian lunch every Friday.", "facilities/canteen.md"),
)

# text token counts the example states (cost = these + 16)
TOKENS = {
    RECORDS[1].text: 26, RECORDS[3].text: 18, RECORDS[0].text: 20, RECORDS[2].text: 27,
    RECORDS[4].text + "\n\n" + RECORDS[5].text: 49,
    'Collection "company-facts" revision 4f1c2a9b0d3e was derived from "press-archive" '
    'revision 9a8b7c6d5e4f.': 44,
    '"company-facts/cfo-2024" supersedes "company-facts/cfo-2021" from 2024-07-01T00:00:00Z.': 54,
    '"company-facts/cfo-2024" and "company-facts/org-chart-finance" state different things '
    'for fact "acme.cfo".': 40,
    "Q: Who is our CFO?\nA: Priya Raman has been CFO since 1 July 2024.": 29,
    "CFO (also Chief Financial Officer): the executive responsible for Acme's finances.": 21,
    "Cite the record id of every fact you state.": 11,
}


def count_tokens(text: str) -> int:
    """The example's counts; any other text: one token per word (only its records use these)."""
    return TOKENS.get(text, len(text.split()))


def counting(extra: dict[str, int]) -> Callable[[str], int]:
    return lambda text: extra.get(text, count_tokens(text))


TASK_COSINES = {"company-facts/cfo-2021": 0.60, "company-facts/cfo-2025": 0.50,
                "company-facts/cfo-2024": 0.48, "company-facts/org-chart-finance": 0.44,
                "company-facts/news-2024-07-a": 0.28, "company-facts/canteen": 0.13,
                "company-facts/news-2024-07-b": 0.11}


def retrieval() -> ReferenceHybrid:
    return ReferenceHybrid(stem_words, {TASK: TASK_COSINES})


def corpus(records: tuple[QueryRecord, ...] = RECORDS) -> dict[str, CollectionCorpus]:
    return {"company-facts": CollectionCorpus("company-facts", REV, 1800, records,
                                              count_tokens)}


COMPANY_FACTS = CollectionAt(name="company-facts", live=True, type="knowledge",
                             current_revision=REV, index_revision=REV, publication=1800,
                             sources=(SourceRef("press-archive", "raw", SOURCE_REV),))

FINANCE = ContextSetState(
    exists=True, id="finance", version=3, name="Finance", collections=("company-facts",),
    verified_answers=(VerifiedAnswer(id="current-cfo", question="Who is our CFO?",
                                     answer="Priya Raman has been CFO since 1 July 2024.",
                                     citations=("company-facts/cfo-2024",)),),
    definitions=(Definition(term="CFO", definition="the executive responsible for Acme's "
                            "finances.", aliases=("Chief Financial Officer",)),),
    instructions=(Instruction(id="cite", text="Cite the record id of every fact you state."),),
    required_evidence=(RequiredEvidence(id="appointment", description="Who was appointed CFO",
                                        query="CFO appointment"),),
)


def namespace(sets: dict[str, ContextSetState] | None = None,
              collections: dict[str, CollectionAt] | None = None) -> NamespaceAt:
    return NamespaceAt(namespace="acme", position=1842, system_time=SYSTEM_TIME,
                       collections=collections or {"company-facts": COMPANY_FACTS},
                       sets=sets if sets is not None else {"finance": FINANCE})

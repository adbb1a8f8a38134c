"""Record semantics of packs (agent-context-api §5.2-§5.5): validity, supersession, being in
force, contradictions across collections, documents, graph facts, shingles and duplicates."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from fractions import Fraction

import msgspec
from hypothesis import given
from hypothesis import strategies as st

from context_service.domain.context.events import QueryRecord, SourceRef
from context_service.domain.pack.graph import contradicts, derived_from, fact_id, supersedes
from context_service.domain.pack.model import CollectionCorpus, document_id
from context_service.domain.pack.records import Judge, document_flags, status
from context_service.domain.pack.text import (
    jaccard,
    near_duplicates,
    normalised,
    shingles,
    text_sha256,
)
from tests.unit import pack_cfo as ex

T = datetime(2025, 1, 1, tzinfo=UTC)
APRIL = datetime(2025, 4, 1, tzinfo=UTC)


def rec(id_: str, **kw: object) -> QueryRecord:
    return QueryRecord(id=id_, context="c", type="memory", revision="1",
                       text=str(kw.pop("text", id_)), **kw)  # type: ignore[arg-type]


def test_validity_statuses_at_the_boundaries() -> None:
    r = rec("r", valid_from=T, valid_to=APRIL)
    assert status(rec("none"), T) == "unknown"
    assert status(r, T) == "valid"  # validFrom inclusive
    assert status(r, datetime(2024, 12, 31, 23, 59, 59, tzinfo=UTC)) == "not_yet_valid"
    assert status(r, APRIL) == "expired"  # validTo exclusive
    assert status(rec("open", valid_to=APRIL), T) == "valid"


def test_the_example_at_both_valid_times() -> None:
    corpus = ex.corpus()
    at_t, at_april = Judge(corpus, T), Judge(corpus, APRIL)
    c = corpus["company-facts"].by_id
    assert at_t.superseded_by(c["cfo-2021"]) == ("company-facts/cfo-2024",)
    assert at_t.superseded_by(c["cfo-2024"]) == ()  # cfo-2025 has not started
    assert [r for r, p in c.items() if at_t.in_force(p)] == [
        "cfo-2024", "org-chart-finance", "news-2024-07-a", "news-2024-07-b", "canteen"]
    assert at_t.contradicts(c["cfo-2024"]) == ("company-facts/org-chart-finance",)
    assert at_t.contradicts(c["cfo-2021"]) == ()
    assert at_april.superseded_by(c["cfo-2024"]) == ("company-facts/cfo-2025",)
    assert at_april.contradicts(c["org-chart-finance"]) == ("company-facts/cfo-2025",)
    flags = at_t.flags(c["cfo-2021"])
    assert flags.superseded and flags.validity.status == "expired" and not flags.contradiction


def test_an_expired_superseder_still_supersedes() -> None:
    recs = [rec("a"), rec("b", supersedes=("a", "missing"), valid_from=T, valid_to=T.replace(
        month=2))]
    corpus = {"c": CollectionCorpus("c", "1", 1, recs, len)}
    judge = Judge(corpus, APRIL)
    assert judge.superseded_by(corpus["c"].by_id["a"]) == ("c/b",)


def test_contradictions_cross_collections_and_skip_equal_texts() -> None:
    one = CollectionCorpus("one", "1", 1, [rec("a", text="Rate is 5%", fact_key="k"),
                                           rec("b", text="rate IS 5 %", fact_key="k")], len)
    two = CollectionCorpus("two", "1", 1, [rec("x", text="Rate is 6%", fact_key="k"),
                                           rec("y", text="Rate is 7%", fact_key="k",
                                               supersedes=("x",))], len)
    judge = Judge({"one": one, "two": two}, T)
    assert judge.contradicts(one.by_id["a"]) == ("two/y",)  # b says the same; x superseded
    assert judge.contradicts(two.by_id["y"]) == ("one/a", "one/b")


def test_the_first_record_per_id_counts() -> None:
    c = CollectionCorpus("c", "1", 1, [rec("a", text="first"), rec("a", text="second")], len)
    assert [p.record.text for p in c.passages] == ["first"]


def test_document_ids_escape_so_the_forms_never_collide() -> None:
    assert document_id("c", rec("r", file="a/b.md")) == "c/a/b.md"
    assert document_id("c", rec("r")) == "c/#r"
    assert document_id("c", rec("r", file="#r")) == "c/%23r"
    assert document_id("c", rec("r", file="50%#")) == "c/50%25#"


def test_document_flags_combine_their_records() -> None:
    recs = [rec("a", file="f", valid_from=T, valid_to=APRIL, fact_key="k", text="one"),
            rec("b", file="f", valid_from=APRIL, supersedes=("a",))]
    corpus = {"c": CollectionCorpus("c", "1", 1, recs, len)}
    judge = Judge(corpus, APRIL)
    flags = document_flags(list(corpus["c"].passages), judge)
    assert flags.validity.valid_from == T and flags.validity.valid_to is None  # b has none
    assert flags.validity.status == "valid"
    assert not flags.superseded and flags.superseded_by == ("c/b",)


def test_graph_fact_texts_and_ids() -> None:
    c = ex.corpus()["company-facts"].by_id
    prov = derived_from(ex.COMPANY_FACTS)
    assert prov is not None and prov.id == "gph:11146dffbb953cc59f458817"
    assert prov.id == "gph:" + hashlib.sha256(
        f"derived_from\0company-facts\0{ex.REV}".encode()).hexdigest()[:24]
    two = msgspec.structs.replace(ex.COMPANY_FACTS, sources=(
        SourceRef("a", "raw", "1" * 64), SourceRef("b", "raw", "2" * 64)))
    two_fact = derived_from(two)
    assert two_fact is not None and two_fact.text.endswith(
        'derived from "a" revision 111111111111, "b" revision 222222222222.')
    fact = supersedes(c["cfo-2024"], c["cfo-2021"])
    assert fact.id == "gph:5820b4e03799ed8194a96be0"
    assert fact.text == ('"company-facts/cfo-2024" supersedes "company-facts/cfo-2021" '
                         'from 2024-07-01T00:00:00Z.')
    plain = CollectionCorpus("c", "1", 1, [rec("a"), rec("b", supersedes=("a",))], len).by_id
    assert supersedes(plain["b"], plain["a"]).text == '"c/b" supersedes "c/a".'
    pair = contradicts("company-facts/org-chart-finance", "company-facts/cfo-2024", "acme.cfo")
    assert pair.id == "gph:0ee53483be7208289e15cd4e" == fact_id(
        "contradicts", "company-facts/cfo-2024", "company-facts/org-chart-finance")
    assert pair.text.startswith('"company-facts/cfo-2024" and "company-facts/org-chart')


def test_shingles_and_duplicates_of_the_example() -> None:
    a = "Acme appointed Priya Raman as CFO effective 1 July 2024, succeeding Dana Lee."
    b = "Acme appointed Priya Raman as CFO effective 1 July 2024, succeeding Dana Lee, Acme said."
    assert len(shingles(a)) == 9 and len(shingles(b)) == 11
    assert jaccard(shingles(a), shingles(b)) == Fraction(9, 11)
    assert near_duplicates(shingles(a), shingles(b))
    assert shingles("one two") == frozenset({"one two"})
    assert normalised("Ünïcode, CASE—and 2 runs!") == "ünïcode case and 2 runs"
    assert text_sha256("A  b!") == text_sha256("a b")


@given(st.lists(st.sampled_from(("a", "b", "c", "d")), max_size=12),
       st.lists(st.sampled_from(("a", "b", "c", "d")), max_size=12))
def test_near_duplicates_is_jaccard_of_at_least_four_fifths(x: list[str], y: list[str]) -> None:
    sx, sy = shingles(" ".join(x)), shingles(" ".join(y))
    assert near_duplicates(sx, sy) == (
        Fraction(len(sx & sy), len(sx | sy)) >= Fraction(4, 5))
    assert near_duplicates(sx, sx)

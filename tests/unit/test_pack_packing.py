"""Packing (agent-context-api §7.4-§7.10) beyond the worked example: set-first classes, the
release check, require_complete, sources, document filters, the latency deadline and scope."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import msgspec

from context_service.adapters.pack.hybrid_features import stem_words
from context_service.domain.context_set.events import Instruction, RequiredEvidence
from context_service.domain.context_set.state import ContextSetState
from context_service.domain.pack.engine import assemble
from context_service.domain.pack.items import Missing, Pack
from context_service.domain.pack.model import CollectionAt, CollectionCorpus
from context_service.domain.pack.render import missing_json
from context_service.domain.pack.request import AsOf, PackRequest
from context_service.domain.pack.retrieval2.reference import ReferenceHybrid
from context_service.domain.pack.scope import PackScope, pack_scope
from tests.unit import pack_cfo as ex

T = datetime(2025, 1, 1, tzinfo=UTC)
AS_OF = AsOf(valid_time=T, system_time=ex.SYSTEM_TIME, position=1842)
MIRROR = CollectionAt(name="mirror", live=True, type="memory", current_revision="m1",
                      index_revision="m1", publication=1700)
MIRROR_RECORDS = (
    ex.record("b1", "Acme has no CFO at all.", "", fact_key="acme.cfo"),
    ex.record("b2", "Acme appointed Priya Raman as CFO effective 1 July 2024, succeeding Dana "
              "Lee. Really.", "m.md"),
)


def everything(_: str) -> bool:
    return True


def run(request: PackRequest, *, corpus: dict[str, CollectionCorpus] | None = None,
        active: ContextSetState | None = None, scope: PackScope | None = None,
        at_release: Callable[[str], bool] = everything,
        deadline: Callable[[], bool] = lambda: False, cosines: Any = None,
        collections: dict[str, CollectionAt] | None = None) -> Pack:
    corpus = corpus if corpus is not None else ex.corpus()
    ns = ex.namespace(collections=collections)
    scope = scope or pack_scope(ns, request, active, everything)
    scope = msgspec.structs.replace(scope, usable=tuple(
        c for c in scope.usable if c.name in corpus))
    retrieval = ReferenceHybrid(stem_words, cosines if cosines is not None else {
        ex.TASK: ex.TASK_COSINES})
    return assemble(request, AS_OF, scope, corpus, retrieval, ex.count_tokens, at_release,
                    deadline)


def with_mirror() -> tuple[dict[str, CollectionCorpus], dict[str, CollectionAt]]:
    corpus = ex.corpus()
    corpus["mirror"] = CollectionCorpus("mirror", "m1", 1700, MIRROR_RECORDS, ex.count_tokens)
    return corpus, {"company-facts": ex.COMPANY_FACTS, "mirror": MIRROR}


def test_classes_follow_the_set_first_order_with_trust_marks() -> None:
    # lexical: the newsletter's second record stays out of the list, so its document is offered
    pack = run(PackRequest(task=ex.TASK, context_set_id="finance", retrieval="lexical"),
               active=ex.FINANCE)
    order = ["verified_answers", "definitions", "instructions", "required_evidence",
             "evidence", "whole_document"]
    ranks = [order.index(i.cls) for i in pack.items]
    assert ranks == sorted(ranks) and set(ranks) == set(range(6))
    assert all((i.trust == "approved") == i.id.startswith("set:") for i in pack.items)
    assert all((i.flags is None) == (i.trust == "approved") for i in pack.items)


def test_without_a_set_only_evidence_and_whole_documents() -> None:
    pack = run(PackRequest(task=ex.TASK, retrieval="lexical"))
    assert {i.cls for i in pack.items} == {"evidence", "whole_document"}
    # hybrid: the neighbour rule brings the newsletter's second record in, and a document
    # whose records are all packed or absorbed is not offered
    assert {i.cls for i in run(PackRequest(task=ex.TASK)).items} == {"evidence"}


def test_require_complete_reports_the_requirement_that_did_not_fit() -> None:
    wordy = msgspec.structs.replace(ex.FINANCE, instructions=(
        Instruction(id="long", text=" ".join(["word"] * 140)),))
    sets = {"finance": wordy}
    request = PackRequest(task=ex.TASK, max_tokens=256, coverage="require_complete",
                          context_set_id="finance")
    scope = pack_scope(ex.namespace(sets=sets), request, wordy, everything)
    pack = run(request, active=wordy, scope=scope)
    assert pack.missing == (Missing(kind="required_evidence", id="appointment",
                                    reason="budget"),)
    assert not pack.complete and pack.refused
    assert [missing_json(m) for m in pack.missing] == [
        {"kind": "required_evidence", "id": "appointment", "reason": "budget"}]
    best = run(msgspec.structs.replace(request, coverage="best_effort"), active=wordy,
               scope=scope)
    assert not best.complete and not best.refused and best.used_tokens <= 256


def test_a_requirement_that_finds_nothing_is_not_found() -> None:
    odd = msgspec.structs.replace(ex.FINANCE, required_evidence=(
        RequiredEvidence(id="zebra", description="z", query="zebra crossing"),))
    pack = run(PackRequest(task=ex.TASK, context_set_id="finance"), active=odd,
               scope=pack_scope(ex.namespace(sets={"finance": odd}),
                                PackRequest(task=ex.TASK, context_set_id="finance"), odd,
                                everything))
    assert pack.missing == (Missing(kind="required_evidence", id="zebra", reason="not_found"),)


def test_the_release_check_drops_and_scrubs_an_ungranted_collection() -> None:
    corpus, collections = with_mirror()
    request = PackRequest(task=ex.TASK)
    granted = run(request, corpus=corpus, collections=collections)
    granted_ids = [i.id for i in granted.items]
    assert "psg:mirror/b1" in granted_ids
    keeper = next(i for i in granted.items if i.id == "psg:company-facts/cfo-2024")
    assert "psg:mirror/b2" in keeper.absorbed
    assert keeper.flags is not None and "mirror/b1" in keeper.flags.contradicts

    pack = run(request, corpus=corpus, collections=collections,
               at_release=lambda c: c != "mirror")
    ids = [i.id for i in pack.items]
    mirror_items = [i for i in granted.items if "mirror" in i.concerns]
    assert not [i for i in pack.items if "mirror" in i.concerns]
    assert pack.omitted.access_count == len(mirror_items) > 1  # b1 and a contradiction fact
    assert ids == [i for i in granted_ids if i not in {m.id for m in mirror_items}]
    assert pack.omitted.duplicate_count == granted.omitted.duplicate_count
    assert "psg:mirror/b2" in granted.omitted.duplicate_ids
    assert "psg:mirror/b2" not in pack.omitted.duplicate_ids
    keeper = next(i for i in pack.items if i.id == "psg:company-facts/cfo-2024")
    assert keeper.absorbed == ("psg:company-facts/news-2024-07-a",)
    assert keeper.flags is not None and keeper.flags.contradiction
    assert keeper.flags.contradicts == ("company-facts/org-chart-finance",)
    assert pack.used_tokens == sum(i.tokens for i in pack.items)


def test_the_release_check_scrubs_budget_ids_and_missing() -> None:
    corpus, collections = with_mirror()
    tight = PackRequest(task=ex.TASK, max_tokens=256)
    granted = run(tight, corpus=corpus, collections=collections)
    assert "psg:mirror/b1" in granted.omitted.budget_ids
    mirror_facts = [i for i in granted.items if "mirror" in i.concerns]  # a contradiction
    pack = run(tight, corpus=corpus, collections=collections, at_release=lambda c: c != "mirror")
    assert pack.omitted.budget_count == granted.omitted.budget_count
    assert pack.omitted.budget_ids == tuple(i for i in granted.omitted.budget_ids
                                            if i != "psg:mirror/b1"
                                            and i != "gph:076e20afdee2229861204973")
    assert pack.omitted.access_count == len(mirror_facts) == 1
    request = PackRequest(task=ex.TASK, max_tokens=256,
                          document_ids=("mirror/none.md", "company-facts/org/chart.md"))
    granted = run(request, corpus=corpus, collections=collections)
    assert granted.missing == (Missing(kind="document", document_id="mirror/none.md",
                                       reason="unavailable"),)
    pack = run(request, corpus=corpus, collections=collections,
               at_release=lambda c: c != "mirror")
    assert pack.missing == () and pack.complete


def test_a_requirement_losing_its_only_item_at_release_is_not_found() -> None:
    corpus, collections = with_mirror()
    only_mirror = msgspec.structs.replace(ex.FINANCE, collections=("mirror",),
                                          required_evidence=(RequiredEvidence(
                                              id="none", description="d", query="no CFO"),))
    request = PackRequest(task=ex.TASK, context_set_id="finance")
    scope = pack_scope(ex.namespace(sets={"finance": only_mirror}, collections=collections),
                       request, only_mirror, everything)
    kept = run(request, corpus={"mirror": corpus["mirror"]}, active=only_mirror, scope=scope,
               collections=collections)
    assert kept.complete
    pack = run(request, corpus={"mirror": corpus["mirror"]}, active=only_mirror, scope=scope,
               collections=collections, at_release=lambda c: c != "mirror")
    assert pack.missing == (Missing(kind="required_evidence", id="none", reason="not_found"),)


def test_sources_decide_the_kinds_of_items() -> None:
    graph_only = run(PackRequest(task=ex.TASK, sources=("graph",), context_set_id="finance"),
                     active=ex.FINANCE)
    assert {i.id.partition(":")[0] for i in graph_only.items} == {"set", "gph"}
    assert graph_only.missing == (Missing(kind="required_evidence", id="appointment",
                                          reason="sources"),)
    docs = run(PackRequest(task=ex.TASK, sources=("documents",)))
    assert [i.id for i in docs.items] == ["doc:company-facts/newsletters/2024-07.md"]
    passages = run(PackRequest(task=ex.TASK, sources=("passages",)))
    assert all(i.id.startswith("psg:") for i in passages.items) and passages.items


def test_document_filters_restrict_the_eligible_records() -> None:
    request = PackRequest(task=ex.TASK, document_ids=(
        "company-facts/press/2024-06-cfo.md", "nowhere/x", "company-facts/press/2024-06-cfo.md"))
    pack = run(request)
    assert [i.id for i in pack.items if i.id.startswith("psg:")] == [
        "psg:company-facts/cfo-2024"]
    assert pack.missing == (Missing(kind="document", document_id="nowhere/x",
                                    reason="unavailable"),)


def test_the_deadline_cuts_retrieval_short() -> None:
    calls: list[int] = []

    def after(n: int) -> Callable[[], bool]:
        calls.clear()

        def passed() -> bool:
            calls.append(1)
            return len(calls) > n
        return passed

    request = PackRequest(task=ex.TASK, context_set_id="finance")
    cut = run(request, active=ex.FINANCE, deadline=after(1))  # after the task's list
    assert cut.missing == (Missing(kind="required_evidence", id="appointment",
                                   reason="deadline"),
                           Missing(kind="deadline", reason="retrieval_cut_short"))
    assert any(i.id.startswith("psg:") for i in cut.items)
    assert not any(i.id.startswith(("gph:", "doc:")) for i in cut.items)
    nothing = run(request, active=ex.FINANCE, deadline=lambda: True)
    assert [i.cls for i in nothing.items] == ["verified_answers", "definitions",
                                             "instructions"]
    whole = run(request, active=ex.FINANCE, deadline=after(3))  # only documents skipped
    assert whole.missing == (Missing(kind="deadline", reason="retrieval_cut_short"),)
    assert not any(i.id.startswith("doc:") for i in whole.items)


def test_scope_of_a_set_not_in_force_at_p() -> None:
    request = PackRequest(task=ex.TASK, context_set_id="finance")
    scope = pack_scope(ex.namespace(sets={}), request, ex.FINANCE, everything)
    assert scope.set_state is None and scope.set_version == 0
    assert [c.name for c in scope.usable] == ["company-facts"]
    assert scope.missing == (Missing(kind="context_set", id="finance", reason="not_in_force"),)
    pack = run(request, active=ex.FINANCE, scope=scope)
    assert not any(i.id.startswith("set:") for i in pack.items)
    assert pack.missing == scope.missing


def test_scope_of_named_collections() -> None:
    stale = msgspec.structs.replace(MIRROR, index_revision="old")
    raw = msgspec.structs.replace(MIRROR, name="raw", type="raw")
    ns = ex.namespace(collections={"company-facts": ex.COMPANY_FACTS, "mirror": stale,
                                   "raw": raw})
    every = pack_scope(ns, PackRequest(task="x"), None, everything)
    assert [c.name for c in every.usable] == ["company-facts"]
    assert every.missing == (Missing(kind="collection", collection_id="mirror",
                                     reason="index_unavailable"),)
    named = pack_scope(ns, PackRequest(task="x", collection_ids=("raw", "later")), None,
                       everything)
    assert named.usable == () and [m.collection_id for m in named.missing] == ["later", "raw"]
    hidden = pack_scope(ns, PackRequest(task="x", collection_ids=("company-facts", "mirror")),
                        None, lambda c: c != "mirror")
    assert hidden.not_found == "mirror"
    outside = pack_scope(ex.namespace(), PackRequest(task="x", collection_ids=("mirror",),
                                                     context_set_id="finance"),
                         ex.FINANCE, everything)
    assert outside.not_found == "mirror"
    unreadable = pack_scope(ns, PackRequest(task="x"), None, lambda c: c != "company-facts")
    assert unreadable.usable == ()

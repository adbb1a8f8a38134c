"""Assembling a pack (§7.4-§7.10): ranked lists under the latency deadline, deduplication
within its limits and the deadline, graph facts, set-first packing within the budget, the
release check and completeness.

Pure: the clock arrives as ``deadline_passed``, the tokenizer as a ``TokenCount``, the lists
as the ``Retrieval`` port (``lexical``: §7.5's BM25 list; ``hybrid``: pack-engine/2's fused
list), access now as ``readable_now``."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import msgspec

from context_service.domain.context_set.events import RequiredEvidence
from context_service.domain.pack import set_items
from context_service.domain.pack.evidence import (
    document_item,
    fact_item,
    passage_id,
    passage_item,
)
from context_service.domain.pack.graph import Fact, derived_from, facts_of_record
from context_service.domain.pack.items import (
    FRAMING_TOKENS,
    REQUIRED_EVIDENCE,
    Item,
    Missing,
    Pack,
)
from context_service.domain.pack.model import Corpus, Document, Retrieval, TokenCount
from context_service.domain.pack.ranking import LIMITS, Candidate, Walk, WalkLimits, ranked
from context_service.domain.pack.records import Judge
from context_service.domain.pack.release import Packed, Skipped, release
from context_service.domain.pack.request import HYBRID, AsOf, PackRequest, split_document_id
from context_service.domain.pack.retrieval2.floor import floor_cut
from context_service.domain.pack.scope import PackScope, Readable

REQUIREMENT_ITEMS = 3
WHOLE_DOCUMENTS = 5


class _Deadline:
    """Checked before each retrieval step; once passed, every later step is skipped."""

    def __init__(self, passed: Callable[[], bool]) -> None:
        self._passed = passed
        self.cut_short = False

    def allows(self) -> bool:
        if not self.cut_short and self._passed():
            self.cut_short = True
        return not self.cut_short


def eligible_documents(request: PackRequest,
                       corpus: Corpus) -> tuple[frozenset[str] | None, list[Missing]]:
    """The eligible documents (None: all) and the ``document`` entries of ``missing``."""
    if not request.document_ids:
        return None, []
    found: list[str] = []
    missing: list[Missing] = []
    for d in dict.fromkeys(request.document_ids):
        c = corpus.get(split_document_id(d)[0])
        if c is not None and d in c.documents:
            found.append(d)
        else:
            missing.append(Missing(kind="document", document_id=d, reason="unavailable"))
    return frozenset(found), missing


class _Packer:
    """Offers items one at a time against the remaining budget (§7.8)."""

    def __init__(self, max_tokens: int) -> None:
        self.remaining = max_tokens
        self.items: list[Item] = []
        self.index: dict[str, int] = {}  # packed id -> position in items
        self.offered: set[str] = set()
        self.skipped: list[Skipped] = []

    def offer(self, item: Item) -> bool:
        self.offered.add(item.id)
        if item.tokens <= self.remaining:
            self.remaining -= item.tokens
            self.index[item.id] = len(self.items)
            self.items.append(item)
            return True
        self.skipped.append(Skipped(item.id, item.concerns))
        return False

    def offer_built(self, item_id: str, tokens: int, collection: str,
                    build: Callable[[], Item]) -> bool:
        """``offer`` of a passage's or a whole document's item (of ``tokens`` with its
        framing), built only when it fits: its flags read the judge, while skipping needs
        only its id and its collection."""
        if tokens <= self.remaining:
            return self.offer(build())
        self.offered.add(item_id)
        self.skipped.append(Skipped(item_id, frozenset((collection,))))
        return False


def _anchor_facts(walk: Walk, corpus: Corpus, judge: Judge,
                  scope: PackScope) -> dict[str, list[Fact]]:
    """Facts effective at T, each anchored at its first non-absorbed candidate in walk order."""
    usable = {c.name: c for c in scope.usable}
    seen: set[str] = set()
    anchored: dict[str, list[Fact]] = {}
    for cand in walk.order:
        if walk.is_absorbed(cand.ref):
            continue
        p = cand.passage
        facts = facts_of_record(p, corpus, judge)
        if p.collection in usable and (prov := derived_from(usable[p.collection])) is not None:
            facts.append(prov)
        for f in facts:
            if f.id not in seen:
                seen.add(f.id)
                anchored.setdefault(cand.ref, []).append(f)
    for facts in anchored.values():
        facts.sort(key=lambda f: f.order)
    return anchored


def assemble(request: PackRequest, as_of: AsOf, scope: PackScope, corpus: Corpus,
             retrieval: Retrieval, count_tokens: TokenCount, readable_now: Readable,
             deadline_passed: Callable[[], bool], limits: WalkLimits = LIMITS) -> Pack:
    """The pack of ``request`` at ``as_of`` (§7.2 steps 10-12).

    ``scope`` comes from ``pack_scope`` (its ``not_found`` already answered by the route);
    ``corpus`` holds the usable indexes of ``scope.usable`` by collection name. The release
    check reads ``readable_now`` at the end, so pass access as of release. Items carry their
    hashes; ``Pack.refused`` says when ``require_complete`` must answer 422. Deduplication
    works within ``limits`` and looks at the deadline as it goes; a candidate it kept without
    every comparison makes ``missing`` say so."""
    judge = Judge(corpus, as_of.valid_time)
    eligible, document_missing = eligible_documents(request, corpus)
    deadline = _Deadline(deadline_passed)
    hybrid = request.retrieval == HYBRID
    s = scope.set_state

    def lists(query: str, requirement: bool) -> list[Candidate] | None:
        if not deadline.allows():
            return None
        if hybrid:  # pack-engine/2: one fused list, its scores ranked as they are
            found = retrieval.hybrid(query, corpus, eligible, requirement)
            if not requirement:
                shares.update((f"{s.collection}/{s.record_id}", s.lexical) for s in found)
            return ranked(corpus, judge, found, None)
        return ranked(corpus, judge, retrieval.lexical(query, corpus, eligible), None)

    shares: dict[str, float] = {}  # the task's hybrid list: each candidate's lexical share
    task_list = lists(request.task, False) or []
    if hybrid:  # the relevance floor: the task's weak tail is no candidate
        task_list = task_list[:floor_cut([shares[c.ref] for c in task_list])]
    requirements: list[tuple[RequiredEvidence, list[Candidate] | None]] = [
        (r, lists(r.query, True)) for r in (s.required_evidence if s is not None else ())]
    walk = Walk(corpus, deadline_passed, limits)
    for _, found in requirements:
        walk.visit(found or [])
    from_requirements = len(walk.order)
    walk.visit(task_list)
    anchored = (_anchor_facts(walk, corpus, judge, scope)
                if request.wants("graph") and deadline.allows() else {})
    packer = _Packer(request.max_tokens)
    walked = {c.ref: c for c in walk.order}

    def offer_passage(c: Candidate, cls: str, req: tuple[str, ...] = ()) -> bool:
        p = c.passage
        return packer.offer_built(
            passage_id(c.ref), p.tokens + FRAMING_TOKENS, p.collection,
            lambda: passage_item(p, judge, cls, c.score, req,
                                 tuple(walk.absorbed.get(c.ref, ()))))

    def offer_facts(ref: str) -> None:
        for f in anchored.get(ref, ()):
            if f.id not in packer.offered:
                packer.offer(fact_item(f, walked[ref].passage, corpus, count_tokens,
                                       walked[ref].score))

    if s is not None:
        for item in (*set_items.verified_answers(s, request.task, count_tokens),
                     *set_items.definitions(s, request.task, count_tokens),
                     *set_items.instructions(s, count_tokens)):
            packer.offer(item)
    served: dict[str, list[str]] = {}  # requirement id -> packed item ids serving it
    unmet: dict[str, str] = {}  # requirement id -> reason before release
    for req, found in requirements:
        served[req.id] = []
        if not request.wants("passages"):
            unmet[req.id] = "sources"
            continue
        if found is None:
            unmet[req.id] = "deadline"
            continue
        picks = [c for c in found if not walk.is_absorbed(c.ref)][:REQUIREMENT_ITEMS]
        for c in picks:
            pid = f"psg:{c.ref}"
            if pid in packer.index:
                at = packer.index[pid]
                held = packer.items[at]
                packer.items[at] = _with_requirement(held, req.id)
                served[req.id].append(pid)
            elif pid not in packer.offered and offer_passage(c, REQUIRED_EVIDENCE,
                                                             (req.id,)):
                served[req.id].append(pid)
        if not served[req.id]:
            unmet[req.id] = "budget" if picks else "not_found"
    for cand in walk.order[:from_requirements]:
        offer_facts(cand.ref)
    for cand in task_list:
        if walk.is_absorbed(cand.ref):
            continue
        if request.wants("passages") and f"psg:{cand.ref}" not in packer.offered:
            offer_passage(cand, "evidence")
        offer_facts(cand.ref)
    if request.wants("documents") and deadline.allows():
        for d, score in _whole_documents(task_list, walk, packer, corpus):
            packer.offer_built(f"doc:{d.document_id}", d.tokens + FRAMING_TOKENS, d.collection,
                               partial(document_item, d, corpus, judge, score))
    packed = Packed(items=packer.items, skipped=packer.skipped, duplicates=walk.duplicates,
                    served=served, unmet=unmet,
                    requirement_order=[r.id for r, _ in requirements])
    head = [m for m in scope.missing if m.kind == "collection"]
    tail = [m for m in scope.missing if m.kind == "context_set"]
    if deadline.cut_short:
        tail.append(Missing(kind="deadline", reason="retrieval_cut_short"))
    if walk.cut_short:
        tail.append(Missing(kind="deadline", reason="deduplication_cut_short"))
    if walk.capped:
        tail.append(Missing(kind="deduplication", reason="comparisons_capped"))
    read = frozenset(corpus) | {m.collection_id for m in head}
    return release(request, as_of, packed, head + document_missing, tail, readable_now, read)


def _with_requirement(item: Item, requirement_id: str) -> Item:
    return msgspec.structs.replace(item,
                                   requirement_ids=(*item.requirement_ids, requirement_id))


def _whole_documents(task_list: list[Candidate], walk: Walk, packer: _Packer,
                     corpus: Corpus) -> list[tuple[Document, int]]:
    """Documents of at least two records, one in the task list, with a record neither packed
    nor absorbed by a packed item, by their best task-list position; the first five."""
    best: dict[str, Candidate] = {}
    for cand in task_list:
        c = corpus[cand.passage.collection]
        best.setdefault(c.document_of[cand.passage.record.id], cand)
    out: list[tuple[Document, int]] = []
    for doc_id, cand in best.items():
        d = corpus[cand.passage.collection].documents[doc_id]
        if len(d.record_ids) < 2:
            continue
        refs = (f"{d.collection}/{r}" for r in d.record_ids)
        if all(f"psg:{r}" in packer.index
               or f"psg:{walk.keeper_of.get(r, '')}" in packer.index for r in refs):
            continue
        out.append((d, cand.score))
        if len(out) == WHOLE_DOCUMENTS:
            break
    return out

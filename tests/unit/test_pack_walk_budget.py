"""What deduplication may cost (agent-context-api §7.8 under §7.5's deadline): the walk's work
is counted in units that depend on the texts alone, a candidate or a walk past its share is kept
unchecked and ``missing`` says so, the deadline is looked at inside the walk, and the token-id
table is bounded in bytes and renewed when the corpora that filled it are dropped."""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from context_service.domain.context.events import QueryRecord
from context_service.domain.pack import text
from context_service.domain.pack.engine import assemble
from context_service.domain.pack.items import Missing, Pack
from context_service.domain.pack.model import CollectionCorpus
from context_service.domain.pack.ranking import Candidate, Walk, WalkLimits
from context_service.domain.pack.reference import ReferenceRetrieval
from context_service.domain.pack.request import PackRequest
from context_service.domain.pack.scope import pack_scope
from tests.unit import pack_cfo as ex
from tests.unit.test_pack_dedup import brute_force
from tests.unit.test_pack_packing import AS_OF

ROOT = Path(__file__).resolve().parents[2]
SHARED = " ".join(f"shared{i}" for i in range(300))  # the block every crafted passage holds


def crafted(n: int, context: str = "c", unique: int = 60) -> list[QueryRecord]:
    """Passages holding one shared block and enough words of their own never to be near
    duplicates of each other (300 shared shingles, about 2 x 64 not: Jaccard about 0.7), so
    every pair shares prefix hashes, passes the filters and is compared in full."""
    return [passage(f"p{i:03d}", SHARED + " " + " ".join(f"own{i}x{j}" for j in range(unique)),
                    context) for i in range(n)]


def passage(id_: str, text_: str, context: str = "c") -> QueryRecord:
    return QueryRecord(id=id_, context=context, type="knowledge", revision="1", text=text_)


def walk_over(records: list[QueryRecord], limits: WalkLimits = WalkLimits(),
              deadline: Callable[[], bool] | None = None) -> Walk:
    corpus = CollectionCorpus("c", "1", 1, records, len)
    walk = Walk({"c": corpus}, deadline, limits)
    walk.visit([Candidate(p, 0, 0) for p in corpus.passages])
    return walk


def outcome(walk: Walk) -> dict[str, object]:
    return {"keeper_of": walk.keeper_of, "unchecked": walk.unchecked, "work": walk.work,
            "capped": walk.capped}


@pytest.fixture
def fresh_table() -> Iterator[None]:
    """A token table of its own generation, with the bound restored afterwards."""
    text._retire(text.token_table())
    limit = text.set_table_limit(text.TABLE_BYTES)
    yield
    text.set_table_limit(limit)
    text._retire(text.token_table())


def test_within_the_limits_the_walk_is_exact_and_never_looks_at_the_clock() -> None:
    looks: list[int] = []

    def never() -> bool:
        looks.append(1)
        return False

    records = [*crafted(12), passage("dup", crafted(1)[0].text + " again")]
    walk = walk_over(records, deadline=never)
    assert walk.keeper_of == {"c/dup": "c/p000"}
    assert walk.keeper_of == brute_force([(f"c/{r.id}", r.text) for r in records])
    assert not walk.capped and not walk.cut_short and walk.unchecked == []
    assert 0 < walk.work < WalkLimits().look_every and looks == []


def test_a_candidate_past_its_share_is_kept_unchecked() -> None:
    full = walk_over(crafted(30))
    assert not full.capped and full.keeper_of == {}
    # every pair is compared in full: candidate i costs about i comparisons of 360 shingles
    share = 10 * 400
    capped = walk_over(crafted(30), WalkLimits(candidate=share))
    assert capped.capped and not capped.cut_short
    assert capped.unchecked and capped.unchecked == [f"c/p{i:03d}" for i in range(30)
                                                     if f"c/p{i:03d}" in capped.unchecked]
    first = int(capped.unchecked[0][3:])
    assert 5 <= first <= 15  # the first candidates fit their share, the later ones do not
    assert capped.work < full.work
    assert [c.ref for c in capped.order] == [c.ref for c in full.order]


def test_a_capped_candidate_that_duplicates_a_kept_one_is_not_absorbed() -> None:
    records = crafted(20)
    records.append(passage("z-dup", records[19].text))
    exact = walk_over(records)
    assert exact.keeper_of == {"c/z-dup": "c/p019"}
    capped = walk_over(records, WalkLimits(candidate=2_000))
    assert "c/z-dup" in capped.unchecked and capped.keeper_of == {}


def test_once_the_walk_has_spent_its_share_every_later_candidate_is_unchecked() -> None:
    full = walk_over(crafted(40))
    half = full.work // 2
    walk = walk_over(crafted(40), WalkLimits(walk=half))
    assert walk.capped and walk.work <= half
    first = walk.unchecked[0]
    refs = [c.ref for c in walk.order]
    assert walk.unchecked == refs[refs.index(first):]
    assert len(walk.unchecked) < 40


def test_the_deadline_is_looked_at_inside_the_walk_every_so_many_units() -> None:
    looks: list[int] = []

    def passes_at_third_look() -> bool:
        looks.append(1)
        return len(looks) >= 3

    full = walk_over(crafted(60))
    every = full.work // 20
    walk = walk_over(crafted(60), WalkLimits(look_every=every), passes_at_third_look)
    assert walk.cut_short and not walk.capped and len(looks) == 3
    refs = [c.ref for c in walk.order]
    first = refs.index(walk.unchecked[0])
    assert walk.unchecked == refs[first:] and 0 < first < 60
    # three looks, one per ``every`` units (a candidate's tokens count too): far less work
    assert walk.work < 3 * every + full.work // 10 < full.work


def test_the_counted_work_is_the_same_in_every_generation_and_process(
        fresh_table: None) -> None:
    records = crafted(25)
    limits = WalkLimits(candidate=5_000, walk=60_000)
    before = outcome(walk_over(records, limits))
    text.token_table().ids_of([f"noise{i}" for i in range(1000)])  # other ids for every token
    text._retire(text.token_table())
    assert outcome(walk_over(records, limits)) == before
    script = ("import json; from tests.unit.test_pack_walk_budget import *; "
              "print(json.dumps(outcome(walk_over(crafted(25), "
              "WalkLimits(candidate=5_000, walk=60_000)))))")
    for seed in ("1", "4242"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        out = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, check=True,
                             capture_output=True, text=True).stdout
        assert json.loads(out) == json.loads(json.dumps(before))


def pack_of(records: list[QueryRecord], limits: WalkLimits = WalkLimits(),
            deadline: Callable[[], bool] = lambda: False) -> Pack:
    corpus = {"company-facts": CollectionCorpus("company-facts", ex.REV, 1800, records, len)}
    request = PackRequest(task="shared7 shared8", retrieval="lexical")
    scope = pack_scope(ex.namespace(sets={}), request, None, lambda _: True)
    return assemble(request, AS_OF, scope, corpus, ReferenceRetrieval({}), len,
                    lambda _: True, deadline, limits)


def test_missing_says_what_deduplication_cut_short() -> None:
    records = crafted(40, "company-facts")
    whole = pack_of(records)
    assert whole.missing == () and whole.complete
    capped = pack_of(records, WalkLimits(candidate=3_000))
    assert capped.missing == (Missing(kind="deduplication", reason="comparisons_capped"),)
    assert not capped.complete
    assert pack_of(records, WalkLimits(candidate=3_000)) == capped  # the cap is deterministic
    looks: list[int] = []

    def passes_in_the_walk() -> bool:  # the task's list is fetched at the first look
        looks.append(1)
        return len(looks) > 1

    cut = pack_of(records, WalkLimits(look_every=1_000), passes_in_the_walk)
    assert cut.missing == (Missing(kind="deadline", reason="retrieval_cut_short"),
                           Missing(kind="deadline", reason="deduplication_cut_short"))
    # the walk's cut keeps what was retrieved: the first passages are still offered
    assert [i.id for i in cut.items][:1] == [i.id for i in whole.items][:1]


def test_the_token_table_is_bounded_in_bytes(fresh_table: None) -> None:
    first = text.token_table()
    text.set_table_limit(400_000)
    # 20,000 distinct tokens: about 2 MB of table
    records = [passage(f"r{i}", " ".join(f"word{i}y{j}" for j in range(200)))
               for i in range(100)]
    corpus = CollectionCorpus("c", "1", 1, records, len)
    corpus.warm()
    table = text.token_table()
    assert table is not first and table.generation > first.generation
    assert table.bytes() <= 400_000 + 1024 * 200
    gauges = {name: value for name, _, labels, value in text.token_table_gauges()
              if labels == {"cache": "pack_token_ids"}}
    assert gauges == {"cs_cache_entries": len(table), "cs_cache_bytes": table.bytes(),
                      "cs_cache_limit_bytes": 400_000}
    assert text.token_ids() == len(table)
    # a signature of an older generation is computed again, with the same prefix and size
    stale = corpus._signatures["r0"]
    assert stale.generation < table.generation
    again = corpus.signature("r0")
    assert again.generation == table.generation
    assert (again.prefix, again.size, again.injective) == (stale.prefix, stale.size,
                                                           stale.injective)


def test_the_table_is_renewed_once_most_of_it_came_from_dropped_corpora(
        fresh_table: None) -> None:
    text.set_table_limit(4_000_000)
    kept = CollectionCorpus("kept", "1", 1, crafted(5, "kept"), len)
    kept.warm()
    hostile = CollectionCorpus("hostile", "1", 2, [
        passage(f"h{i}", " ".join(f"junk{i}z{j}" for j in range(400)), "hostile")
        for i in range(20)], len)
    hostile.warm()
    table = text.token_table()
    grown = table.bytes()
    assert grown > 4_000_000 // 8 and len(table) > 8_000
    del hostile
    gc.collect()
    renewed = text.token_table()
    assert renewed is not table and len(renewed) == 0
    kept.signature("p000")  # the corpora still held give their tokens again as packs need them
    assert 0 < renewed.bytes() < grown // 10


def test_a_walk_keeps_its_generation_when_the_table_is_renewed_under_it(
        fresh_table: None) -> None:
    records = [*crafted(10), passage("dup", crafted(1)[0].text)]
    corpus = CollectionCorpus("c", "1", 1, records, len)
    corpus.warm()
    walk = Walk({"c": corpus})
    candidates = [Candidate(p, 0, 0) for p in corpus.passages]
    walk.visit(candidates[:5])
    text._retire(text.token_table())
    text.token_table().ids_of([f"other{i}" for i in range(500)])  # ids now mean other tokens
    walk.visit(candidates[5:])
    assert walk.keeper_of == {"c/dup": "c/p000"}

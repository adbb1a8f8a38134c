"""Retrieval quality of context packs on two public test collections, against a plain BM25
computed in the same run over the same records.

    python -m bench.bench_retrieval [--locomo PATH] [--cranfield DIR] [--limit-questions N]
                                    [--details PATH]

The collections are set up exactly as ``../shared/benchmarks/README.md`` describes, through the
HTTP API of ``context-service serve`` (its own process, embedded PostgreSQL, rate limit off):

- LoCoMo (``--locomo``, default ``../shared/benchmarks/locomo-dev.json``; the public file is
  ``data/locomo10.json`` of the ``snap-research/LoCoMo`` repository): one ``memory`` context per
  conversation, one query record per turn (id ``D12:3`` -> ``d12-3``, text
  ``[<session date>] <speaker>: <text>`` plus `` [shares a photo: <caption>]``, ``file``
  ``session_<n>``). Every answerable question (categories 1-4) is asked as packs restricted to
  its conversation (``filters.collectionIds``, ``sources: ["passages"]``) in both modes and at
  three budgets: 1,000 and 2,000 tokens (evidence recall over every passage the pack holds) and
  8,000 tokens, whose passage items in pack order give recall@5/@10/@25.
- Cranfield (``--cranfield``, default ``../shared/benchmarks/cranfield``; the public Cranfield
  collection: ``cran.all.1400``, ``cran.qry``, ``cranqrel``): one ``knowledge`` context, one
  record per abstract (``title`` = ``.T``, ``text`` = ``.W``; empty abstracts left out); each
  query one 4,000-token pack per mode; nDCG@10 (gain 5 - code) and recall@10 over the first 10
  passage items.

Each index is published with its revision, in parts of at most 512 KiB when larger
(docs/query-index-uploads.md); the packs start once the index is searchable with its features
(the first pack waits for the feature view) and the pack caches are complete.

The plain BM25 is Okapi BM25 (k1 = 1.2, b = 0.75) with the specification's lexical-list rules
(agent-context-api.md §7.5: the query tokenizer of context-service-api.md §5.2, title weighted
3x, scores rounded to millionths, ties by record id), written out here independently of the
service; at a budget it packs its list greedily by each record's cost (its token count under
the embedding model's tokenizer, plus 16 framing tokens), skipping what does not fit, as a pack
does. ``--limit-questions N`` keeps N evenly spaced questions of each conversation and N
Cranfield queries (quick runs). ``--details PATH`` writes every question's ranks as JSON there
(outside the project: it quotes the data). Runs are deterministic: packs pin
``asOf.validTime``.

Goals (issue 25, development halves): LoCoMo recall@5/10/25 >= 0.70/0.80/0.88, at 2,000/1,000
tokens >= 0.88/0.80, pack p95 < 50 ms; Cranfield nDCG@10 hybrid / plain BM25 >= 1.15x.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import math
import re
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

import httpx

from bench.bench_packs import ADMIN, cache_complete
from bench.bench_query import NS, OWNER
from bench.harness import percentile, postgres, served
from context_service.lexical import tokenize  # spec 5.2's tokenizer, as the lexical list's

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "benchmarks"
LOCOMO_DEFAULT = SHARED / "locomo-dev.json"
CRANFIELD_DEFAULT = SHARED / "cranfield"
SOURCES = ("LoCoMo: data/locomo10.json of the public repository snap-research/LoCoMo "
           "(https://github.com/snap-research/LoCoMo); Cranfield: the public Cranfield "
           "collection (cran.all.1400, cran.qry, cranqrel), e.g. from "
           "http://ir.dcs.gla.ac.uk/resources/test_collections/cran/")

PACKS = "/api/agent/v1/context-packs"
VALID = "2025-01-01T00:00:00Z"
MODES = ("hybrid", "lexical")
LOCOMO_BUDGETS = (2000, 1000, 8000)  # 8,000: the ranked order for recall@5/10/25
DEPTHS = (5, 10, 25)
CRANFIELD_BUDGET = 4000
FRAMING = 16  # tokens added to an item's text (agent-context-api §7.6)
LIST_LIMIT = 200  # the lexical list's cut (§7.5)
PART_BYTES = 512 * 1024
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
# The LoCoMo paper, Table 3: DRAGON over dialog turns, recall@5/10/25/50.
ANCHOR = {5: 0.588, 10: 0.675, 25: 0.799, 50: 0.848}
GOALS = {"r5": 0.70, "r10": 0.80, "r25": 0.88, "t2000": 0.88, "t1000": 0.80,
         "ndcg_ratio": 1.15, "p95_ms": 50.0}


# --- data ----------------------------------------------------------------------------------------


@dataclass
class Collection:
    name: str
    type: str
    records: list[dict[str, Any]]


@dataclass
class Question:
    collection: str
    text: str
    category: int  # LoCoMo category; 0 for Cranfield
    relevant: dict[str, int]  # record id -> gain (LoCoMo evidence: gain 1)


@dataclass
class Loaded:
    collections: list[Collection]
    questions: list[Question]
    notes: list[str] = field(default_factory=list)


def _revision(name: str) -> str:
    return hashlib.sha256(f"bench-retrieval/{name}".encode()).hexdigest()


def _record(collection: Collection, id_: str, text: str, title: str = "",
            file: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {"id": id_, "context": collection.name, "type": collection.type,
                           "revision": _revision(collection.name), "text": text,
                           "source": {"context": "", "type": "", "revision": ""}}
    if title:
        out["title"] = title
    if file:
        out["file"] = file
    return out


def _missing(what: str, path: Path) -> SystemExit:
    return SystemExit(f"{what} not found at {path}: pass its path ({SOURCES})")


EVIDENCE = re.compile(r"D\s*:?\s*(\d+)\s*:\s*(\d+)")


def evidence_ids(refs: Iterable[str]) -> list[str]:
    """Record ids of evidence references: ``D12:3`` -> ``d12-3``. A few entries of the public
    file are malformed (``D8:6; D9:17``, ``D:11:26``, ``D``): every ``D<s>:<t>`` found in an
    entry counts, an entry without one is dropped."""
    out: list[str] = []
    for ref in refs:
        for session, turn in EVIDENCE.findall(ref):
            rid = f"d{int(session)}-{int(turn)}"
            if rid not in out:
                out.append(rid)
    return out


def load_locomo(path: Path) -> Loaded:
    if not path.is_file():
        raise _missing("the LoCoMo file", path)
    samples = json.loads(path.read_text(encoding="utf-8"))
    loaded = Loaded([], [])
    dropped = unknown = 0
    for sample in samples:
        conversation = sample["conversation"]
        collection = Collection(f"locomo-{_slug(sample['sample_id'])}", "memory", [])
        sessions = sorted((int(m.group(1)), key) for key in conversation
                          if (m := re.fullmatch(r"session_(\d+)", key)))
        for number, key in sessions:
            date = conversation.get(f"{key}_date_time", "")
            for turn in conversation[key]:
                text = f"[{date}] {turn['speaker']}: {turn['text']}"
                if turn.get("blip_caption"):
                    text += f" [shares a photo: {turn['blip_caption']}]"
                (rid,) = evidence_ids([turn["dia_id"]])
                collection.records.append(_record(collection, rid, text, file=f"session_{number}"))
        known = {r["id"] for r in collection.records}
        for qa in sample["qa"]:
            if qa["category"] not in CATEGORIES:
                continue
            found = evidence_ids(qa.get("evidence", []))
            unknown += sum(1 for rid in found if rid not in known)
            relevant = {rid: 1 for rid in found if rid in known}
            if not relevant:
                dropped += 1
                continue
            loaded.questions.append(Question(collection.name, qa["question"], qa["category"],
                                             relevant))
        loaded.collections.append(collection)
    if unknown or dropped:
        loaded.notes.append(f"{unknown} evidence reference(s) name no turn and are ignored; "
                            f"{dropped} question(s) left without evidence are skipped")
    return loaded


def _slug(value: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", value.lower()).strip("-")


def _sections(text: str) -> list[tuple[str, dict[str, str]]]:
    """The ``.I`` entries of a Cranfield file: (number, {field letter: text})."""
    out = []
    for chunk in re.split(r"^\.I\s+", text, flags=re.M)[1:]:
        number, _, body = chunk.partition("\n")
        fields: dict[str, str] = {}
        for m in re.finditer(r"^\.([A-Z])\s*\n(.*?)(?=^\.[A-Z]\s*$|\Z)", body, re.M | re.S):
            fields[m.group(1)] = m.group(2).strip()
        out.append((number.strip(), fields))
    return out


def load_cranfield(folder: Path) -> Loaded:
    files = {name: folder / name for name in ("cran.all.1400", "cran.qry", "cranqrel")}
    for path in files.values():
        if not path.is_file():
            raise _missing("the Cranfield collection", path)
    collection = Collection("cranfield", "knowledge", [])
    empty = 0
    for number, fields in _sections(files["cran.all.1400"].read_text(encoding="utf-8")):
        if not fields.get("W", "").strip():
            empty += 1
            continue
        collection.records.append(_record(collection, str(int(number)), fields["W"],
                                          title=fields.get("T", "")))
    queries = [fields.get("W", "") for _, fields in
               _sections(files["cran.qry"].read_text(encoding="utf-8"))]
    judged: dict[int, dict[str, int]] = {}
    other = 0
    for line in files["cranqrel"].read_text(encoding="utf-8").splitlines():
        parts = line.split()
        if len(parts) < 3:
            continue
        query, doc, code = int(parts[0]), str(int(parts[1])), int(parts[2])
        if 1 <= code <= 4:
            judged.setdefault(query, {})[doc] = 5 - code
        else:
            other += 1
    known = {r["id"] for r in collection.records}
    loaded = Loaded([collection], [])
    for position, text in enumerate(queries, start=1):  # cranqrel numbers are positions
        relevant = {d: g for d, g in judged.get(position, {}).items() if d in known}
        if relevant and text:
            loaded.questions.append(Question(collection.name, text, 0, relevant))
    loaded.notes.append(f"{empty} empty abstract(s) left out; {other} judgement(s) with a code "
                        f"outside 1-4 ignored")
    return loaded


def evenly(items: Sequence[Question], limit: int | None) -> list[Question]:
    """At most ``limit`` items, evenly spaced (all of them without a limit)."""
    if limit is None or len(items) <= limit:
        return list(items)
    return [items[i * len(items) // limit] for i in range(limit)]


def limited(questions: list[Question], limit: int | None) -> list[Question]:
    by: dict[str, list[Question]] = {}
    for q in questions:
        by.setdefault(q.collection, []).append(q)
    return [q for name in by for q in evenly(by[name], limit)]


# --- plain BM25 ----------------------------------------------------------------------------------


class Bm25:
    """Okapi BM25 over one collection's records: tf = 3 x title + 1 x text occurrences."""

    K1, B = 1.2, 0.75

    def __init__(self, records: list[dict[str, Any]]) -> None:
        self.ids = [r["id"] for r in records]
        self.tf: list[Counter[str]] = []
        for r in records:
            weights = Counter(tokenize(r["text"]))
            for token in tokenize(r.get("title", "")):
                weights[token] += 3
            self.tf.append(weights)
        self.lengths = [sum(w.values()) for w in self.tf]
        self.avgdl = sum(self.lengths) / len(self.lengths)
        self.df: Counter[str] = Counter(t for w in self.tf for t in w)
        self.postings: dict[str, list[int]] = {}
        for row, w in enumerate(self.tf):
            for t in w:
                self.postings.setdefault(t, []).append(row)

    def ranked(self, query: str, limit: int = LIST_LIMIT) -> list[str]:
        """Record ids with BM25 > 0: score (rounded to millionths) descending, then id."""
        terms = Counter(tokenize(query))  # first-appearance order, repeats counted
        n_records = len(self.ids)
        idf = {t: math.log(1 + (n_records - self.df[t] + 0.5) / (self.df[t] + 0.5))
               for t in terms}
        rows = sorted({row for t in terms for row in self.postings.get(t, ())})
        scored = []
        for row in rows:
            w, length, total = self.tf[row], self.lengths[row], 0.0
            for t, qtf in terms.items():
                tf = w.get(t, 0)
                if tf:
                    total += qtf * idf[t] * tf * (self.K1 + 1) / (
                        tf + self.K1 * (1 - self.B + self.B * length / self.avgdl))
            micros = round(Fraction(total) * 1_000_000)
            if micros > 0:
                scored.append((-micros, self.ids[row]))
        return [rid for _, rid in sorted(scored)[:limit]]


def packed(ranked: list[str], costs: dict[str, int], budget: int) -> list[str]:
    """The ids a greedy pack of ``ranked`` holds within ``budget`` (what does not fit is
    skipped, later smaller ones still packed)."""
    out, left = [], budget
    for rid in ranked:
        if costs[rid] <= left:
            out.append(rid)
            left -= costs[rid]
    return out


def token_costs(collections: list[Collection]) -> dict[tuple[str, str], int]:
    """Each record's cost: its text's token count under the embedding model's tokenizer + 16."""
    from context_service.adapters.embedding.wordllama_model import load

    embedder = load()
    out = {}
    for c in collections:
        counts = embedder.counts([r["text"] for r in c.records])
        out.update({(c.name, r["id"]): n + FRAMING for r, n in zip(c.records, counts,
                                                                 strict=True)})
    return out


# --- measures ----------------------------------------------------------------------------------


def recall(found: Iterable[str], relevant: dict[str, int]) -> float:
    return len(set(found) & relevant.keys()) / len(relevant)


def ndcg(found: Sequence[str], relevant: dict[str, int], k: int = 10) -> float:
    dcg = sum(relevant.get(rid, 0) / math.log2(i + 2) for i, rid in enumerate(found[:k]))
    ideal = sorted(relevant.values(), reverse=True)[:k]
    best = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / best if best else 0.0


def mean(values: Iterable[float]) -> float:
    listed = list(values)
    return sum(listed) / len(listed) if listed else float("nan")


RANK_BUCKETS = ((1, 1), (2, 5), (6, 10), (11, 25), (26, 50), (51, 10**9))


def rank_buckets(ranks: list[int | None]) -> list[float]:
    """Share of evidence turns at each rank bucket, then the share not listed at all."""
    total = len(ranks) or 1
    out = [sum(1 for r in ranks if r is not None and lo <= r <= hi) / total
           for lo, hi in RANK_BUCKETS]
    return [*out, sum(1 for r in ranks if r is None) / total]


# --- the service -----------------------------------------------------------------------------


class Service:
    def __init__(self, client: httpx.Client) -> None:
        self.client = client
        self.owner = {"X-Context-Subject": OWNER.key}
        self.bearer: dict[str, str] = {}

    def setup(self) -> None:
        member = self.client.put(f"/v1/namespaces/{NS}/members", headers=ADMIN,
                                 json={"subject": {"kind": OWNER.kind, "name": OWNER.name},
                                       "role": "owner"})
        _ok(member, 200)
        made = self.client.post(f"/api/w/{NS}/agent-credentials", headers=self.owner,
                                json={"name": "bench-retrieval", "scopes": ["context:read"],
                                      "expiresInDays": 1})
        _ok(made, 201)
        self.bearer = {"Authorization": f"Bearer {made.json()['token']}"}

    def publish(self, collection: Collection) -> int:
        """Create the context, publish its revision and its index (in parts when large);
        the number of parts sent."""
        _ok(self.client.post("/v1/contexts", headers=self.owner, json={
            "name": collection.name, "namespace": NS, "type": collection.type,
            "storage": {"backend": "pvc", "size": "1Gi", "accessMode": "ReadWriteOnce"}}), 201)
        base = f"/v1/namespaces/{NS}/contexts/{collection.name}"
        revision = _revision(collection.name)
        _ok(self.client.post(f"{base}/revisions", headers=self.owner, json={
            "id": revision, "createdAt": "2025-01-01T00:00:00Z", "operation": "sync"}), 201)
        parts = split(collection.records, PART_BYTES)
        for number, records in enumerate(parts, start=1):
            body: dict[str, Any] = {"revision": revision, "records": records}
            if len(parts) > 1:
                body |= {"uploadId": f"bench-{collection.name}", "part": number,
                         "parts": len(parts)}
            _ok(self.client.put(f"{base}/query-index", headers=self.owner, json=body), 204)
        return len(parts)

    def pack(self, task: str, collection: str, mode: str, budget: int,
             patience_s: float = 0.0) -> tuple[dict[str, Any], float, float]:
        """The pack, the seconds it took (client side) and the service's own total
        (``Server-Timing``); retried on 503 for ``patience_s`` (views catching up after a
        publication)."""
        body = {"task": task, "budget": {"maxTokens": budget}, "asOf": {"validTime": VALID},
                "filters": {"collectionIds": [collection], "sources": ["passages"]},
                "retrieval": mode}
        deadline = time.monotonic() + patience_s
        while True:
            started = time.perf_counter()
            response = self.client.post(PACKS, headers=self.bearer, json=body)
            took = time.perf_counter() - started
            if response.status_code == 503 and time.monotonic() < deadline:
                time.sleep(1.0)
                continue
            _ok(response, 200)
            return response.json(), took, server_total(response)


def server_total(response: httpx.Response) -> float:
    for part in response.headers.get("Server-Timing", "").split(", "):
        name, _, dur = part.partition(";dur=")
        if name == "total" and dur:
            return float(dur) / 1000
    return float("nan")


def _ok(response: httpx.Response, status: int) -> None:
    if response.status_code != status:
        raise RuntimeError(f"{response.request.method} {response.request.url.path}: "
                           f"{response.status_code} {response.text[:500]}")


def split(records: list[dict[str, Any]], limit: int) -> list[list[dict[str, Any]]]:
    """Records in order, greedily in parts whose encoded records stay within ``limit`` bytes."""
    parts: list[list[dict[str, Any]]] = [[]]
    size = 0
    for r in records:
        n = len(json.dumps(r, ensure_ascii=False).encode()) + 1
        if parts[-1] and size + n > limit:
            parts.append([])
            size = 0
        parts[-1].append(r)
        size += n
    return parts


def passages(pack: dict[str, Any]) -> list[str]:
    """Record ids of the pack's passage items, in pack order."""
    return [i["source"]["recordId"] for i in pack["items"] if i["id"].startswith("psg:")]


def absorbed(pack: dict[str, Any]) -> set[str]:
    return {a.rpartition("/")[2] for i in pack["items"] for a in i.get("absorbed", ())}


# --- runs ------------------------------------------------------------------------------------


@dataclass
class Asked:
    """One question's results: per mode and budget the passage ids, tokens used, seconds."""
    question: Question
    packs: dict[tuple[str, int], list[str]] = field(default_factory=dict)
    used: dict[tuple[str, int], int] = field(default_factory=dict)
    seconds: dict[tuple[str, int], float] = field(default_factory=dict)
    server: dict[tuple[str, int], float] = field(default_factory=dict)
    absorbed: dict[tuple[str, int], set[str]] = field(default_factory=dict)
    bm25: list[str] = field(default_factory=list)


def ask_all(service: Service, questions: list[Question], budgets: Sequence[int],
            progress: Callable[[int], None]) -> list[Asked]:
    """Every question in both modes at every budget; the requests of one question are sent
    one after another in an order that rotates from question to question, so a burst of other
    work on a shared machine does not land on one mode only."""
    combos = [(mode, budget) for budget in budgets for mode in MODES]
    out = []
    for n, q in enumerate(questions):
        asked = Asked(q)
        at = n % len(combos)
        for mode, budget in combos[at:] + combos[:at]:
            pack, took, server = service.pack(q.text, q.collection, mode, budget)
            key = (mode, budget)
            asked.packs[key] = passages(pack)
            asked.used[key] = pack["budget"]["usedTokens"]
            asked.seconds[key] = took
            asked.server[key] = server
            asked.absorbed[key] = absorbed(pack)
        out.append(asked)
        progress(n + 1)
    return out


def locomo_figures(asked: list[Asked], costs: dict[tuple[str, str], int]) -> dict[str, Any]:
    deep = LOCOMO_BUDGETS[-1]
    figures: dict[str, Any] = {"questions": len(asked)}
    for mode in MODES:
        row: dict[str, Any] = {}
        for k in DEPTHS:
            row[f"r{k}"] = mean(recall(a.packs[mode, deep][:k], a.question.relevant)
                                for a in asked)
        for budget in LOCOMO_BUDGETS[:2]:
            row[f"t{budget}"] = mean(recall(a.packs[mode, budget], a.question.relevant)
                                     for a in asked)
            row[f"tokens{budget}"] = mean(a.used[mode, budget] for a in asked)
            row[f"passages{budget}"] = mean(len(a.packs[mode, budget]) for a in asked)
            row[f"absorbed{budget}"] = mean(
                recall(set(a.packs[mode, budget]) | a.absorbed[mode, budget],
                       a.question.relevant) for a in asked)
        row["by_category_t2000"] = {
            CATEGORIES[c]: mean(recall(a.packs[mode, 2000], a.question.relevant)
                                for a in asked if a.question.category == c)
            for c in CATEGORIES}
        row["by_category_r10"] = {
            CATEGORIES[c]: mean(recall(a.packs[mode, deep][:10], a.question.relevant)
                                for a in asked if a.question.category == c)
            for c in CATEGORIES}
        for budget in LOCOMO_BUDGETS:
            ms = [a.seconds[mode, budget] * 1000 for a in asked]
            row[f"p50_ms_{budget}"] = percentile(ms, 50)
            row[f"p95_ms_{budget}"] = percentile(ms, 95)
            ms = [a.server[mode, budget] * 1000 for a in asked]
            row[f"server_p50_ms_{budget}"] = percentile(ms, 50)
            row[f"server_p95_ms_{budget}"] = percentile(ms, 95)
        row["ranks"] = rank_buckets([_rank(a.packs[mode, deep], rid)
                                     for a in asked for rid in a.question.relevant])
        figures[mode] = row
    bm: dict[str, Any] = {f"r{k}": mean(recall(a.bm25[:k], a.question.relevant) for a in asked)
                          for k in DEPTHS}
    for budget in LOCOMO_BUDGETS[:2]:
        held = [packed(a.bm25, {rid: costs[a.question.collection, rid] for rid in a.bm25},
                       budget) for a in asked]
        bm[f"t{budget}"] = mean(recall(h, a.question.relevant)
                                for h, a in zip(held, asked, strict=True))
        bm[f"tokens{budget}"] = mean(sum(costs[a.question.collection, rid] for rid in h)
                                     for h, a in zip(held, asked, strict=True))
        bm[f"passages{budget}"] = mean(len(h) for h in held)
        if budget == 2000:
            bm["by_category_t2000"] = {
                CATEGORIES[c]: mean(recall(h, a.question.relevant)
                                    for h, a in zip(held, asked, strict=True)
                                    if a.question.category == c) for c in CATEGORIES}
    bm["by_category_r10"] = {CATEGORIES[c]: mean(recall(a.bm25[:10], a.question.relevant)
                                                 for a in asked if a.question.category == c)
                             for c in CATEGORIES}
    bm["ranks"] = rank_buckets([_rank(a.bm25, rid) for a in asked
                                for rid in a.question.relevant])
    figures["bm25"] = bm
    figures["lexical_equals_bm25_top25"] = sum(
        1 for a in asked if a.packs["lexical", deep][:25] == a.bm25[:25])
    figures["category_counts"] = {CATEGORIES[c]: sum(1 for a in asked if a.question.category == c)
                                  for c in CATEGORIES}
    return figures


def _rank(listed: list[str], rid: str) -> int | None:
    return listed.index(rid) + 1 if rid in listed else None


def cranfield_figures(asked: list[Asked]) -> dict[str, Any]:
    figures: dict[str, Any] = {"queries": len(asked)}
    for label, lists in [(mode, [a.packs[mode, CRANFIELD_BUDGET] for a in asked])
                         for mode in MODES] + [("bm25", [a.bm25 for a in asked])]:
        figures[label] = {
            "ndcg10": mean(ndcg(found, a.question.relevant)
                           for found, a in zip(lists, asked, strict=True)),
            "r10": mean(recall(found[:10], a.question.relevant)
                        for found, a in zip(lists, asked, strict=True))}
    for mode in MODES:
        ms = [a.seconds[mode, CRANFIELD_BUDGET] * 1000 for a in asked]
        server = [a.server[mode, CRANFIELD_BUDGET] * 1000 for a in asked]
        figures[mode] |= {"p50_ms": percentile(ms, 50), "p95_ms": percentile(ms, 95),
                          "server_p50_ms": percentile(server, 50),
                          "server_p95_ms": percentile(server, 95),
                          "tokens": mean(a.used[mode, CRANFIELD_BUDGET] for a in asked)}
    base = figures["bm25"]["ndcg10"]
    figures["ratio_hybrid_bm25"] = figures["hybrid"]["ndcg10"] / base if base else float("nan")
    figures["ratio_lexical_bm25"] = figures["lexical"]["ndcg10"] / base if base else float("nan")
    figures["lexical_equals_bm25_top10"] = sum(
        1 for a in asked if a.packs["lexical", CRANFIELD_BUDGET][:10] == a.bm25[:10])
    return figures


# --- printing ----------------------------------------------------------------------------------


def _f(value: float, digits: int = 3) -> str:
    return "n/a" if value != value else f"{value:.{digits}f}"


def _mixed(tokens: float, passages: float) -> str:
    return f"{_f(tokens, 0)}/{_f(passages, 1)}"


def _pair(a: float, b: float, digits: int) -> str:
    """Two figures in one column: ``a/b``."""
    return f"{_f(a, digits)}/{_f(b, digits)}"


def print_locomo(f: dict[str, Any]) -> None:
    h, lx, bm = f["hybrid"], f["lexical"], f["bm25"]
    print(f"\nLoCoMo: {f['questions']} questions (categories 1-4: "
          + ", ".join(f"{n} {c}" for c, n in f["category_counts"].items()) + ")")
    print(f"{'measure':<44}{'hybrid':>11}{'lexical':>11}{'BM25':>11}{'anchor':>11}{'goal':>8}")

    def row(label: str, key: str, anchor: str = "", goal: str = "") -> None:
        print(f"{label:<44}{_f(h[key]):>11}{_f(lx[key]):>11}{_f(bm[key]):>11}{anchor:>11}"
              f"{goal:>8}")

    for k in DEPTHS:
        row(f"evidence recall@{k}", f"r{k}", f"{ANCHOR[k]:.3f}", f">={GOALS[f'r{k}']:.2f}")
    row("evidence recall at 2,000 tokens", "t2000", f"{ANCHOR[25]:.3f}*",
        f">={GOALS['t2000']:.2f}")
    row("evidence recall at 1,000 tokens", "t1000", "", f">={GOALS['t1000']:.2f}")
    for budget in LOCOMO_BUDGETS[:2]:
        print(f"{f'  mean tokens used / passages at {budget:,}':<44}"
              + "".join(f"{_mixed(m[f'tokens{budget}'], m[f'passages{budget}']):>11}"
                        for m in (h, lx, bm)))
    for c in CATEGORIES.values():
        print(f"{f'  {c}, recall@10 / at 2,000 tokens':<44}"
              + "".join(f"{_pair(m['by_category_r10'][c], m['by_category_t2000'][c], 2):>11}"
                        for m in (h, lx, bm)))
    print(f"{'  at 2,000 counting absorbed duplicates':<44}{_f(h['absorbed2000']):>11}"
          f"{_f(lx['absorbed2000']):>11}")
    for budget in LOCOMO_BUDGETS:
        print(f"{f'pack latency p50 / p95 ms ({budget:,} tokens)':<44}"
              + "".join(f"{_pair(m[f'p50_ms_{budget}'], m[f'p95_ms_{budget}'], 1):>11}"
                        for m in (h, lx))
              + f"{'':>22}{'<' + str(int(GOALS['p95_ms'])) + ' p95':>8}")
        print(f"{'  of which in the service (Server-Timing)':<44}"
              + "".join(f"{_pair(m[f'server_p50_ms_{b}'], m[f'server_p95_ms_{b}'], 1):>11}"
                        for m in (h, lx) for b in [budget]))
    labels = ["1", "2-5", "6-10", "11-25", "26-50", ">50", "absent"]
    print("evidence turns by rank (8,000-token pack; BM25: its list of 200): "
          + ", ".join(labels))
    for label, m in (("hybrid", h), ("lexical", lx), ("BM25", bm)):
        print(f"  {label:<8}" + " ".join(f"{v:6.1%}" for v in m["ranks"]))
    print("anchor: DRAGON dense retriever over dialog turns (LoCoMo paper, Table 3), "
          "recall@5/10/25/50 = 0.588/0.675/0.799/0.848; *at 25 passages")
    print(f"lexical's first 25 passages equal the plain BM25's on "
          f"{f['lexical_equals_bm25_top25']}/{f['questions']} questions")


def print_cranfield(f: dict[str, Any]) -> None:
    print(f"\nCranfield: {f['queries']} queries, {CRANFIELD_BUDGET:,}-token packs")
    print(f"{'measure':<28}{'hybrid':>11}{'lexical':>11}{'BM25':>11}")
    for label, key in (("nDCG@10", "ndcg10"), ("recall@10", "r10")):
        print(f"{label:<28}" + "".join(f"{_f(f[m][key]):>11}"
                                       for m in ("hybrid", "lexical", "bm25")))
    print(f"{'mean tokens used':<28}" + "".join(f"{_f(f[m]['tokens'], 0):>11}" for m in MODES))
    print(f"{'pack latency p50 / p95 ms':<28}"
          + "".join(f"{_pair(f[m]['p50_ms'], f[m]['p95_ms'], 1):>11}" for m in MODES))
    print(f"{'  of which in the service':<28}"
          + "".join(f"{_pair(f[m]['server_p50_ms'], f[m]['server_p95_ms'], 1):>11}"
                    for m in MODES))
    print(f"nDCG@10 hybrid / BM25: {f['ratio_hybrid_bm25']:.3f}x (goal >= "
          f"{GOALS['ndcg_ratio']:.2f}x); lexical / BM25: {f['ratio_lexical_bm25']:.3f}x; "
          f"lexical's first 10 equal BM25's on {f['lexical_equals_bm25_top10']}/{f['queries']}")


def details(path: Path, sets: dict[str, list[Asked]]) -> None:
    out = {name: [{"collection": a.question.collection, "question": a.question.text,
                   "category": a.question.category, "relevant": a.question.relevant,
                   "bm25": a.bm25[:50],
                   "packs": {f"{m}/{b}": ids for (m, b), ids in a.packs.items()},
                   "used": {f"{m}/{b}": n for (m, b), n in a.used.items()}}
                  for a in asked] for name, asked in sets.items()}
    path.write_text(json.dumps(out, ensure_ascii=False, indent=1), encoding="utf-8")


def _rounded(value: Any) -> Any:
    if isinstance(value, float):
        return None if value != value else round(value, 4)
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_rounded(v) for v in value]
    return value


# --- main ------------------------------------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--locomo", type=Path, default=LOCOMO_DEFAULT,
                        help="LoCoMo JSON (snap-research/LoCoMo data/locomo10.json or a part)")
    parser.add_argument("--cranfield", type=Path, default=CRANFIELD_DEFAULT,
                        help="folder with cran.all.1400, cran.qry and cranqrel")
    parser.add_argument("--limit-questions", type=int, default=None, metavar="N",
                        help="N evenly spaced questions per conversation and N Cranfield "
                             "queries (quick runs)")
    parser.add_argument("--details", type=Path, default=None, metavar="PATH",
                        help="write every question's ranked ids here (JSON; quotes the data)")
    args = parser.parse_args()
    logging.getLogger("httpx").setLevel(logging.WARNING)
    started = time.perf_counter()
    locomo = load_locomo(args.locomo)
    cranfield = load_cranfield(args.cranfield)
    locomo_q = limited(locomo.questions, args.limit_questions)
    cran_q = evenly(cranfield.questions, args.limit_questions)
    collections = locomo.collections + cranfield.collections
    for note in locomo.notes + cranfield.notes:
        print(f"note: {note}")

    bm25 = {c.name: Bm25(c.records) for c in collections}
    costs = token_costs(locomo.collections)
    with postgres() as (url, dirs):
        env = {"CS_AGENT_RATE_PER_SECOND": "0", "CS_READ_WAIT_SECONDS": "120"}
        with served(url, dirs, workers="projections,query-index", env=env) as server, \
                httpx.Client(base_url=server.url, timeout=180) as client:
            service = Service(client)
            service.setup()
            published = time.perf_counter()
            parts = {c.name: service.publish(c) for c in collections}
            print(f"published {sum(len(c.records) for c in collections):,} records in "
                  f"{len(collections)} contexts ({sum(parts.values())} upload parts) in "
                  f"{time.perf_counter() - published:.1f}s", flush=True)
            for c in collections:  # the first pack waits for the features of the index
                service.pack("warm up", c.name, "hybrid", 1000, patience_s=600)
            print(f"searchable with features after {time.perf_counter() - published:.1f}s",
                  flush=True)
            warmed = cache_complete(client)
            print(f"pack caches complete after {warmed:.1f}s more", flush=True)
            first = time.perf_counter()

            def progress(label: str, total: int) -> Callable[[int], None]:
                def tick(n: int) -> None:
                    if n % 100 == 0 or n == total:
                        print(f"  {label}: {n}/{total} questions "
                              f"({time.perf_counter() - first:.0f}s)", flush=True)
                return tick

            asked_l = ask_all(service, locomo_q, LOCOMO_BUDGETS,
                              progress("LoCoMo", len(locomo_q)))
            asked_c = ask_all(service, cran_q, (CRANFIELD_BUDGET,),
                              progress("Cranfield", len(cran_q)))
            packs_s = time.perf_counter() - first
    for a in asked_l + asked_c:
        a.bm25 = bm25[a.question.collection].ranked(a.question.text)
    summary: dict[str, Any] = {"locomo": locomo_figures(asked_l, costs),
                               "cranfield": cranfield_figures(asked_c)}
    print_locomo(summary["locomo"])
    print_cranfield(summary["cranfield"])
    if args.details:
        details(args.details, {"locomo": asked_l, "cranfield": asked_c})
    total = time.perf_counter() - started
    print(f"\n{len(asked_l) * 2 * len(LOCOMO_BUDGETS) + len(asked_c) * 2} packs in "
          f"{packs_s:.0f}s; whole run {total:.0f}s")
    summary |= {"bench": "retrieval", "seconds": total, "limit_questions": args.limit_questions,
                "anchor": {f"r{k}": v for k, v in ANCHOR.items()}, "goals": GOALS}
    print(json.dumps(_rounded(summary), ensure_ascii=False, separators=(",", ":")))
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Retrieval quality of context packs: recall of planted passages, hybrid against lexical, in
the same run over the same labelled corpus.

    python -m bench.bench_recall [--records 2000] [--distractors 2000] [--tasks 60] [--seed 1]

The corpus is ``bench_query``'s filler records plus short passages stating facts ("Marta Okafor
repaired the large automobile in Lisbon on 3 May 2021."): one planted passage per task and
``--distractors`` others sharing a planted fact's person and city, so only the action and the
object tell them apart. Half the tasks ask in the passage's own words, half with synonyms no
passage contains ("fixed the big car"). Every task asks a pack (default budget) in ``lexical``
then ``hybrid`` mode through ``context-service serve``; a hit is the planted passage's item id
among ``items``.
Goal (issue 11): hybrid recall >= lexical recall; the exit status is 1 otherwise.
"""

from __future__ import annotations

import argparse
import logging
import random
import sys
from dataclasses import dataclass

import httpx

from bench.bench_packs import credential, seeded
from bench.bench_query import _revision, corpus, vocabulary
from bench.harness import postgres, served
from context_service.domain.context.events import QueryRecord, SourceRef
from context_service.domain.pack.evidence import passage_id

# (word in the passage, synonym used by the synonym tasks); neither appears in the other's text.
VERBS = [("repaired", "fixed"), ("purchased", "bought"), ("began", "started"),
         ("constructed", "built"), ("examined", "inspected"), ("assisted", "helped"),
         ("concluded", "finished"), ("discovered", "found"), ("requested", "asked for"),
         ("photographed", "pictured")]
OBJECTS = [("automobile", "car"), ("physician", "doctor"), ("residence", "house"),
           ("infant", "baby"), ("attorney", "lawyer"), ("present", "gift"),
           ("couch", "sofa"), ("shop", "store"), ("vessel", "ship"), ("journey", "trip")]
ADJECTIVES = [("large", "big"), ("small", "little"), ("rapid", "fast"), ("ancient", "old"),
              ("costly", "expensive"), ("damaged", "broken")]
PEOPLE = ["Marta Okafor", "Jonas Lindqvist", "Ines Moreau", "Kenji Tanaka", "Amara Castillo",
          "Omar Haddad"]
CITIES = ["Lisbon", "Valparaiso", "Tbilisi"]
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August",
          "September", "October", "November", "December"]


@dataclass(frozen=True)
class Fact:
    person: str
    city: str
    verb: tuple[str, str]
    adjective: tuple[str, str]
    obj: tuple[str, str]
    date: str

    @property
    def key(self) -> tuple[str, str, str, str]:
        return self.person, self.city, self.verb[0], self.obj[0]

    def passage(self) -> str:
        return (f"{self.person} {self.verb[0]} the {self.adjective[0]} {self.obj[0]} in "
                f"{self.city} on {self.date}.")

    def task(self, synonyms: bool) -> str:
        k = 1 if synonyms else 0
        return (f"What was the date when {self.person} {self.verb[k]} the {self.adjective[k]} "
                f"{self.obj[k]} in {self.city}?")


@dataclass(frozen=True)
class Task:
    text: str
    item: str
    synonyms: bool


def draw(rng: random.Random) -> Fact:
    date = f"{rng.randint(1, 28)} {rng.choice(MONTHS)} {rng.randint(1990, 2024)}"
    return Fact(rng.choice(PEOPLE), rng.choice(CITIES), rng.choice(VERBS),
                rng.choice(ADJECTIVES), rng.choice(OBJECTS), date)


def facts(rng: random.Random, planted: int, distractors: int) -> tuple[list[Fact], list[Fact]]:
    """Planted facts with distinct keys, and distractors that share a planted fact's person and
    city (so only the action and object tell them apart) but never a planted key."""
    chosen: dict[tuple[str, str, str, str], Fact] = {}
    while len(chosen) < planted:
        fact = draw(rng)
        chosen.setdefault(fact.key, fact)
    out = list(chosen.values())
    others: list[Fact] = []
    while len(others) < distractors:
        fact = draw(rng)
        if fact.key not in chosen:
            others.append(fact)
    return out, others


def record(rng: random.Random, name: str, type_: str, text: str, title: str) -> QueryRecord:
    return QueryRecord(
        id=f"{rng.getrandbits(64):016x}", context=name, type=type_, revision=_revision(name),
        text=text, title=title, source=SourceRef(f"src-{rng.randrange(10)}", "state",
                                                 _revision("src")),
        file="knowledge/records.jsonl")


def plant(rng: random.Random, data: dict[str, list[QueryRecord]], planted: list[Fact],
          distractors: list[Fact]) -> list[Task]:
    """One record per fact, spread over the contexts at random places; half the tasks (drawn
    with the seed) use synonyms."""
    names = sorted(data)
    synonym_half = set(rng.sample(range(len(planted)), len(planted) // 2))
    tasks = []
    for i, fact in enumerate(planted + distractors):
        name = names[i % len(names)]
        made = record(rng, name, data[name][0].type, fact.passage(), f"Note {i}")
        data[name].insert(rng.randrange(len(data[name]) + 1), made)
        if i < len(planted):
            tasks.append(Task(fact.task(i in synonym_half), passage_id(f"{name}/{made.id}"),
                              i in synonym_half))
    return tasks


def recall(hits: list[bool]) -> float:
    return sum(hits) / len(hits) if hits else 0.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=2_000, help="filler records")
    parser.add_argument("--contexts", type=int, default=10)
    parser.add_argument("--vocabulary", type=int, default=30_000)
    parser.add_argument("--tasks", type=int, default=60, help="planted facts, one task each")
    parser.add_argument("--distractors", type=int, default=2_000,
                        help="short passages sharing a planted fact's person and city")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    logging.getLogger("httpx").setLevel(logging.WARNING)
    rng = random.Random(args.seed)
    data = corpus(rng, args.records, args.contexts, vocabulary(rng, args.vocabulary))
    tasks = plant(rng, data, *facts(rng, args.tasks, args.distractors))
    hits: dict[str, list[bool]] = {"lexical": [], "hybrid": []}
    with postgres() as (url, dirs):
        took = seeded(url, data)
        print(f"{args.records} filler + {args.distractors} distractor + {len(tasks)} "
              f"planted records over {args.contexts} contexts seeded, features computed "
              f"in {took:.1f}s", flush=True)
        env = {"CS_AGENT_RATE_PER_SECOND": "0", "CS_READ_WAIT_SECONDS": "30"}
        with served(url, dirs, workers="projections,query-index", env=env) as server, \
                httpx.Client(base_url=server.url, timeout=60) as client:
            bearer = {"Authorization": f"Bearer {credential(client)}"}
            for mode, found in hits.items():
                for task in tasks:
                    response = client.post("/api/agent/v1/context-packs", headers=bearer,
                                           json={"task": task.text, "retrieval": mode})
                    if response.status_code != 200:
                        raise RuntimeError(response.text)
                    found.append(task.item in {i["id"] for i in response.json()["items"]})
    figures = {mode: (recall(found), recall([h for h, t in zip(found, tasks, strict=True)
                                             if t.synonyms]),
                      recall([h for h, t in zip(found, tasks, strict=True) if not t.synonyms]))
               for mode, found in hits.items()}
    for mode, (overall, synonyms, own) in figures.items():
        print(f"{mode:<8} recall {overall:6.1%} ({sum(hits[mode])}/{len(tasks)})  "
              f"own words {own:6.1%}  synonyms {synonyms:6.1%}")
    (lexical, syn_lex, _), (hybrid, syn_hyb, _) = figures["lexical"], figures["hybrid"]
    print(f"hybrid / lexical recall: overall {_ratio(hybrid, lexical)}, "
          f"synonyms {_ratio(syn_hyb, syn_lex)} (goal: hybrid >= lexical)")
    sys.stdout.flush()
    return 0 if hybrid >= lexical else 1


def _ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}x" if b else ("inf" if a else "n/a")


if __name__ == "__main__":
    sys.exit(main())

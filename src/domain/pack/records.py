"""Record semantics at a valid time T (§5.3): validity status, supersession, being in force and
contradictions across the collections of a request. Judged lazily, per record reference, so a
pack over a large corpus only pays for the records it looks at."""

from __future__ import annotations

from datetime import datetime

from context_service.domain.context.events import QueryRecord
from context_service.domain.pack.items import Flags, Validity
from context_service.domain.pack.model import Corpus, Passage
from context_service.domain.pack.text import normalised

VALID, UNKNOWN, NOT_YET_VALID, EXPIRED = "valid", "unknown", "not_yet_valid", "expired"


def status(record: QueryRecord, t: datetime) -> str:
    """The validity status of ``record`` at ``t``."""
    if record.valid_from is None and record.valid_to is None:
        return UNKNOWN
    if record.valid_from is not None and t < record.valid_from:
        return NOT_YET_VALID
    if record.valid_to is not None and t >= record.valid_to:
        return EXPIRED
    return VALID


def started(record: QueryRecord, t: datetime) -> bool:
    """No ``validFrom``, or ``validFrom`` ≤ T."""
    return record.valid_from is None or record.valid_from <= t


def validity(record: QueryRecord, t: datetime) -> Validity:
    return Validity(status=status(record, t), valid_from=record.valid_from,
                    valid_to=record.valid_to)


class Judge:
    """The judgements of §5.3 over ``corpus`` at ``t``, memoised by record reference."""

    def __init__(self, corpus: Corpus, t: datetime) -> None:
        self.corpus = corpus
        self.t = t
        self._superseded_by: dict[str, tuple[str, ...]] = {}
        self._contradicts: dict[str, tuple[str, ...]] = {}
        self._normalised: dict[str, str] = {}
        self._by_fact: dict[str, list[Passage]] | None = None

    def passage(self, ref: str) -> Passage | None:
        collection, _, record_id = ref.partition("/")
        c = self.corpus.get(collection)
        return c.by_id.get(record_id) if c is not None else None

    def superseded_by(self, p: Passage) -> tuple[str, ...]:
        """References of the records of the same index that supersede ``p`` at T, sorted."""
        ref = p.ref
        found = self._superseded_by.get(ref)
        if found is None:
            c = self.corpus[p.collection]
            found = tuple(sorted(f"{p.collection}/{b}" for b in c.superseders.get(p.record.id, ())
                                 if started(c.by_id[b].record, self.t)))
            self._superseded_by[ref] = found
        return found

    def in_force(self, p: Passage) -> bool:
        return (status(p.record, self.t) in (VALID, UNKNOWN)) and not self.superseded_by(p)

    def contradicts(self, p: Passage) -> tuple[str, ...]:
        """References of every record ``p`` contradicts at T, across the corpus, sorted."""
        ref = p.ref
        found = self._contradicts.get(ref)
        if found is not None:
            return found
        out: list[str] = []
        if p.record.fact_key and self.in_force(p):
            mine = self.normalised(p)
            for x in self._fact_group(p.record.fact_key):
                if x is p or not self.in_force(x):
                    continue
                if x.collection == p.collection and (
                        x.record.id in p.record.supersedes or p.record.id in x.record.supersedes):
                    continue
                if self.normalised(x) != mine:
                    out.append(x.ref)
        found = tuple(sorted(out))
        self._contradicts[ref] = found
        return found

    def flags(self, p: Passage) -> Flags:
        """Validity and flags of a passage item (§7.11)."""
        by = self.superseded_by(p)
        against = self.contradicts(p)
        return Flags(validity=validity(p.record, self.t), superseded=bool(by), superseded_by=by,
                     contradiction=bool(against), contradicts=against)

    def normalised(self, p: Passage) -> str:
        found = self._normalised.get(p.ref)
        if found is None:
            found = self._normalised[p.ref] = normalised(p.record.text)
        return found

    def _fact_group(self, fact_key: str) -> list[Passage]:
        if self._by_fact is None:
            self._by_fact = {}
        group = self._by_fact.get(fact_key)
        if group is None:
            group = [self.corpus[name].by_id[i] for name in sorted(self.corpus)
                     for i in self.corpus[name].fact_keys.get(fact_key, ())]
            self._by_fact[fact_key] = group
        return group


def document_flags(passages: list[Passage], judge: Judge) -> Flags:
    """A document's validity and flags from its records' (§7.11)."""
    froms = [p.record.valid_from for p in passages]
    tos = [p.record.valid_to for p in passages]
    valid_from = min(f for f in froms if f is not None) if all(
        f is not None for f in froms) and froms else None
    valid_to = max(t for t in tos if t is not None) if all(
        t is not None for t in tos) and tos else None
    probe = QueryRecord(id="", context="", type="", revision="", text="",
                        valid_from=valid_from, valid_to=valid_to)
    each = [judge.flags(p) for p in passages]
    by = tuple(sorted({r for f in each for r in f.superseded_by}))
    against = tuple(sorted({r for f in each for r in f.contradicts}))
    return Flags(validity=Validity(status=status(probe, judge.t), valid_from=valid_from,
                                   valid_to=valid_to),
                 superseded=bool(each) and all(f.superseded for f in each), superseded_by=by,
                 contradiction=any(f.contradiction for f in each), contradicts=against)

"""A field source over an index's records, computed in memory (answers at an earlier
position, and the reference the SQL plans are tested against): filters, rows and aggregates
folded in Python."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from context_service.domain.context.events import QueryRecord
from context_service.domain.fields.aggregates import aggregate
from context_service.domain.fields.engine import sort_documents
from context_service.domain.fields.filters import matches
from context_service.domain.fields.plan import Filter, Plan
from context_service.domain.fields.source import Cite, Json, Page
from context_service.domain.fields.values import Money, Stated, Value, stated
from context_service.domain.pack.model import document_id


@dataclass
class Info:
    name: str
    type: str
    documents: int = 0
    currencies: list[str] = field(default_factory=list)


class MemorySource:
    """The documents of ``records`` (first record per id, §5.1) and, per field, each
    document's value: that of its first record (publish order) carrying it."""

    def __init__(self, collection: str, records: Sequence[QueryRecord]) -> None:
        seen: set[str] = set()
        docs: dict[str, None] = {}
        self.stated: dict[str, dict[str, Stated]] = {}
        types: dict[str, str] = {}
        for record in records:
            if record.id in seen:
                continue
            seen.add(record.id)
            doc = document_id(collection, record)
            docs[doc] = None
            for f in record.fields:
                types.setdefault(f.name, f.type)
                per = self.stated.setdefault(f.name, {})
                if doc not in per:
                    per[doc] = stated(doc, record.id, record.text, f)
        self.all = list(docs)
        self.documents = len(self.all)
        self._catalog: dict[str, Info] = {}
        for name, per in self.stated.items():
            info = Info(name, types[name], len(per))
            if info.type == "money":
                info.currencies = sorted({s.value.currency for s in per.values()
                                          if isinstance(s.value, Money)})
            self._catalog[name] = info

    def catalog(self) -> Mapping[str, Info]:
        return self._catalog

    def matched(self, filters: Sequence[Filter]) -> list[str]:
        out = []
        for doc in self.all:
            if all(matches(f, _value(self.stated.get(f.field, {}).get(doc))) for f in filters):
                out.append(doc)
        return out

    def values(self, name: str, documents: Sequence[str]) -> dict[str, Stated]:
        per = self.stated.get(name, {})
        return {d: per[d] for d in documents if d in per}

    def page(self, plan: Plan) -> Page:
        matched = self.matched(plan.filters)
        if not plan.fields:
            return Page(len(matched), [], {})
        order = sorted(matched)
        if plan.sort_field is not None:
            order = sort_documents(order, self.values(plan.sort_field, matched),
                                   plan.descending)
        chosen = order[:plan.limit]
        return Page(len(matched), chosen,
                    {n: self.values(n, chosen) for n in dict.fromkeys(plan.fields)})

    def aggregates(self, plan: Plan, cite: Cite) -> Json:
        """Folded here over every matched document's values (the reference of the SQL plans)."""
        matched = self.matched(plan.filters)
        names = {fn.field for fn in plan.functions if fn.field is not None}
        if plan.group_by is not None:
            names.add(plan.group_by)
        values = {n: self.values(n, matched) for n in sorted(names)}
        return aggregate(matched, plan.group_by, plan.functions, values,
                         {n: self._catalog[n].type for n in names}, cite)


def _value(s: Stated | None) -> Value | None:
    return None if s is None else s.value

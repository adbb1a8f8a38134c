"""``fields/query`` at a ``knownAt`` day reads the collection as it was at the end of that
day, and spec §3.4 rule 5 holds there as for a time-travel pack: the generation of the name
that lived then must be admitted (a stranger's, whose name a member took since, is not). Over
the route's own ports, faked: a test cannot record events on two days."""

from __future__ import annotations

from datetime import date
from types import SimpleNamespace
from typing import Any

from context_service.domain.fields.memory import MemorySource
from context_service.domain.pack.model import CollectionAt
from context_service.http.agent import fields

AT_P = 40  # the position the end of the knownAt day resolves to
PUBLICATION = 7


class Inputs:
    def resolve(self, namespace: str, head: int | None, system_time: Any) -> tuple[int, Any]:
        return AT_P, system_time

    def namespace_at(self, namespace: str, position: int) -> Any:
        assert position == AT_P
        return SimpleNamespace(collections={"vendor-notes": CollectionAt(
            name="vendor-notes", live=True, type="knowledge", current_revision="r",
            index_revision="r", publication=PUBLICATION)})


class Admission:
    def __init__(self, admitted: frozenset[str]) -> None:
        self.admitted = admitted
        self.asked: list[tuple[str, int]] = []

    def admitted_at(self, namespace: str, position: int) -> frozenset[str]:
        self.asked.append((namespace, position))
        return self.admitted


def request(admission: Admission) -> Any:
    packs = SimpleNamespace(configured=lambda: SimpleNamespace(inputs=Inputs()),
                            head=lambda: 99)
    services = SimpleNamespace(packs=packs, agent=SimpleNamespace(admission=admission))
    return SimpleNamespace(app=SimpleNamespace(state=SimpleNamespace(services=services)))


def source_at(admission: Admission) -> Any:
    current = SimpleNamespace(publication=PUBLICATION, type="knowledge")
    session = SimpleNamespace(source=lambda c: "the index as published")
    found, _ = fields._at(request(admission), SimpleNamespace(workspace="acme"), session,
                          "vendor-notes", current, date(2026, 12, 1))
    return found


def test_an_admitted_generation_is_read_at_the_day() -> None:
    admission = Admission(frozenset({"vendor-notes"}))
    assert source_at(admission) == "the index as published"
    assert admission.asked == [("acme", AT_P)]


def test_a_generation_rule_5_refuses_then_holds_nothing() -> None:
    """Before, the index that lived at the day was read whatever rule 5 said of it."""
    found = source_at(Admission(frozenset()))
    assert isinstance(found, MemorySource)
    assert found.documents == 0

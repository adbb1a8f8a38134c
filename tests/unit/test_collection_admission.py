"""The admission rule of agent-context-api §3.4 rule 5 as pure functions, the projection's fold
in log order over an in-memory view, and the agents' catalog listing forgetting what it holds
when a context set changes."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import UTC, datetime

from hypothesis import given
from hypothesis import strategies as st

from context_service.domain.context.events import (
    AccessGranted,
    ContextAdopted,
    ContextCreated,
    ContextDeleted,
    Grant,
    Storage,
)
from context_service.domain.context.state import ContextState
from context_service.domain.context_set.events import (
    ContextSetArchived,
    ContextSetCreated,
    ContextSetReplaced,
)
from context_service.domain.events import ADMIN, Event, Subject
from context_service.domain.stream import Recorded, StreamRef
from context_service.domain.workspace.admission import (
    Origin,
    SetInForce,
    admitted,
    admitted_at,
    admitted_names,
    created_by_member,
)
from context_service.domain.workspace.events import WorkspaceMemberRemoved, WorkspaceMemberSet
from context_service.projections.collection_admission.projection import CollectionAdmission
from context_service.projections.collection_admission.view import AdmissionChanges, MemberKey
from context_service.projections.context_catalog.listing import CatalogListing

AT = datetime(2026, 1, 1, tzinfo=UTC)
ALICE, MALLORY = Subject("user", "alice"), Subject("user", "mallory")


# --- the rule ---------------------------------------------------------------------------------


def test_a_members_creation_is_admitted_whatever_the_sets_say() -> None:
    assert admitted("notes", Origin(10, by_member=True), [])
    assert admitted("notes", Origin(10, by_member=True), [SetInForce(5, ("other",))])


def test_a_strangers_creation_needs_a_set_version_recorded_after_it() -> None:
    origin = Origin(10, by_member=False)
    assert not admitted("notes", origin, [])
    assert not admitted("notes", origin, [SetInForce(11, ("other",))])
    # named before it existed: the name was reserved for another generation, or none yet
    assert not admitted("notes", origin, [SetInForce(9, ("notes",))])
    assert admitted("notes", origin, [SetInForce(9, ("notes",)), SetInForce(12, ("notes",))])


def test_at_a_point_in_the_log_the_generation_that_lived_then_is_judged() -> None:
    members, strangers = Origin(10, by_member=True, deleted=20), Origin(10, False, deleted=20)
    assert admitted_at("notes", members, [], 15)
    assert not admitted_at("notes", members, [], 9)  # not created yet
    assert not admitted_at("notes", members, [], 20)  # deleted by then
    assert not admitted_at("notes", strangers, [], 15)
    # a set names the generation living when its version was recorded
    assert admitted_at("notes", strangers, [SetInForce(12, ("notes",))], 15)
    assert not admitted_at("notes", strangers, [SetInForce(25, ("notes",))], 15)
    assert not admitted_at("notes", strangers, [SetInForce(8, ("notes",))], 15)
    # the name taken again at 30: the generation that lived at 15 is not known, so refused
    assert not admitted_at("notes", Origin(30, by_member=True), [], 15)
    assert admitted_at("notes", Origin(30, by_member=True), [], 31)
    assert not admitted_at("notes", None, [SetInForce(12, ("notes",))], 15)


def test_nothing_recorded_is_nothing_admitted() -> None:
    assert not admitted("notes", None, [SetInForce(99, ("notes",))])


def test_who_counts_as_a_member_when_creating() -> None:
    assert created_by_member(ALICE, holds_role=True)
    assert not created_by_member(MALLORY, holds_role=False)
    assert created_by_member(ADMIN, holds_role=False)  # acts as owner of every workspace
    assert not created_by_member(None, holds_role=True)  # adopted: creator unknown


names = st.sampled_from(["a", "b", "c", "d"])
origins = st.dictionaries(names, st.none() | st.builds(Origin, st.integers(1, 50),
                                                       st.booleans()))
versions = st.lists(st.builds(SetInForce, st.integers(1, 50),
                              st.lists(names, unique=True).map(tuple)), max_size=4)


@given(origins, versions)
def test_the_names_are_those_the_rule_admits_one_by_one(
        found: dict[str, Origin | None], sets: list[SetInForce]) -> None:
    assert admitted_names(found, sets) == frozenset(
        n for n, o in found.items() if admitted(n, o, sets))


# --- the projection's fold --------------------------------------------------------------------


class MemoryView:
    def __init__(self) -> None:
        self.held: set[MemberKey] = set()
        self.stored: dict[tuple[str, str], Origin] = {}
        self.sets: dict[tuple[str, str], SetInForce] = {}

    def members(self, keys: Collection[MemberKey]) -> set[MemberKey]:
        return {k for k in keys if k in self.held}

    def origins(self, keys: Collection[tuple[str, str]]) -> dict[tuple[str, str], Origin]:
        return {k: self.stored[k] for k in keys if k in self.stored}

    def save(self, changes: AdmissionChanges) -> None:
        for key, held in changes.members.items():
            (self.held.add if held else self.held.discard)(key)
        self.stored.update(changes.origins)
        for k, version in changes.sets.items():
            if version is None:
                self.sets.pop(k, None)
            else:
                self.sets[k] = version


class Log:
    def __init__(self) -> None:
        self.records: list[Recorded] = []

    def add(self, kind: str, key: str, event: Event, ns: str = "acme") -> int:
        position = len(self.records) + 1
        self.records.append(Recorded(position, StreamRef(kind, ns, key), 1,
                                     type(event).__name__, event))
        return position

    def member(self, subject: Subject, role: str | None) -> None:
        if role is None:
            self.add("workspace", "members", WorkspaceMemberRemoved(
                at=AT, actor=ADMIN.key, subject=subject, previous_role="member"))
        else:
            self.add("workspace", "members", WorkspaceMemberSet(
                at=AT, actor=ADMIN.key, subject=subject, role=role, previous_role=""))

    def create(self, name: str, owner: Subject, ns: str = "acme") -> int:
        return self.add("context", name, ContextCreated(
            at=AT, actor=owner.key, namespace=ns, name=name, type="knowledge",
            storage=Storage("pvc", "1Gi", "ReadWriteOnce"), owner=owner), ns)

    def version(self, set_id: str, *collections: str, replaced: bool = False) -> int:
        cls = ContextSetReplaced if replaced else ContextSetCreated
        return self.add("context_set", set_id, cls(
            at=AT, actor=ALICE.key, id=set_id, version=1, name="S", description="",
            collections=collections, verified_answers=(), definitions=(), instructions=(),
            required_evidence=(), query_templates=()))


def apply(view: MemoryView, records: Sequence[Recorded]) -> None:
    CollectionAdmission().apply(view, records)


def test_membership_is_read_at_each_creations_place_in_the_log() -> None:
    log = Log()
    log.member(ALICE, "viewer")
    first = log.create("before", ALICE)
    log.member(ALICE, None)
    second = log.create("after", ALICE)
    log.create("elsewhere", ALICE, ns="globex")  # a role in acme is no role in globex
    for cut in range(len(log.records) + 1):  # any batch boundary gives the same view
        view = MemoryView()
        apply(view, log.records[:cut])
        apply(view, log.records[cut:])
        assert view.stored == {("acme", "before"): Origin(first, True),
                                ("acme", "after"): Origin(second, False),
                                ("globex", "elsewhere"): Origin(5, False)}
        assert view.held == set()


def test_deletion_adoption_and_archive() -> None:
    log = Log()
    log.member(ALICE, "member")
    created = log.create("notes", ALICE)
    deleted = log.add("context", "notes", ContextDeleted(at=AT, actor=ALICE.key, force=False))
    adopted = log.add("context", "old", ContextAdopted(
        at=AT, actor="service:context-service", namespace="acme", name="old",
        type="knowledge", storage=Storage("pvc", "1Gi", "ReadWriteOnce"), phase="Bound",
        grants=()))
    log.version("finance", "old")
    log.version("hr", "old")
    log.add("context_set", "hr", ContextSetArchived(at=AT, actor=ALICE.key, id="hr",
                                                    version=1))
    replaced = log.version("finance", "notes", replaced=True)
    for cut in range(len(log.records) + 1):  # any batch boundary gives the same view
        view = MemoryView()
        apply(view, log.records[:cut])
        apply(view, log.records[cut:])
        # a deleted collection's origin is kept, with where it ended (time travel reads it)
        assert view.stored == {("acme", "notes"): Origin(created, True, deleted),
                               ("acme", "old"): Origin(adopted, False)}
    assert view.sets == {("acme", "finance"): SetInForce(replaced, ("notes",))}


def test_a_batch_without_these_events_saves_nothing() -> None:
    class Untouchable(MemoryView):
        def save(self, changes: AdmissionChanges) -> None:
            raise AssertionError("nothing to save")

    log = Log()
    log.add("context", "notes", AccessGranted(at=AT, actor=ALICE.key,
                                              grant=Grant(MALLORY, ("read",), AT)))
    CollectionAdmission().apply(Untouchable(), log.records)
    assert not AdmissionChanges()


# --- the agents' listing ----------------------------------------------------------------------


class CountingReads:
    def __init__(self) -> None:
        self.reads = 0

    def list(self, namespace: str, subject: Subject | None) -> Sequence[ContextState]:
        self.reads += 1
        return ()

    def refused(self, namespace: str) -> frozenset[str]:
        return frozenset()


def test_a_set_version_makes_the_listing_read_again() -> None:
    reads = CountingReads()
    listing = CatalogListing(reads, live=lambda: True)
    listing.live_contexts("acme")
    listing.live_contexts("acme")
    assert reads.reads == 1
    log = Log()
    log.member(ALICE, "owner")
    listing.applied(log.records)  # membership changes admit nothing already created
    listing.live_contexts("acme")
    assert reads.reads == 1
    log.version("finance", "notes")
    listing.applied(log.records[-1:])
    listing.live_contexts("acme")
    assert reads.reads == 2

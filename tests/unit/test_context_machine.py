"""Random command sequences against one context stream, checked against a small model.

Several callers (including the bootstrap administrator) create, grant, revoke, attach, detach,
publish, delete and re-create; the reconciler's observations arrive in between. Every answer
must be the one the model predicts (spec 1.5-1.9, 3, 4.4), and the invariants below hold after
every step.
"""

from __future__ import annotations

from datetime import timedelta

from hypothesis import event as tally
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    rule,
)

from context_service.domain.context.commands import (
    AttachConsumer,
    Command,
    CreateContext,
    DeleteContext,
    DetachConsumer,
    GrantAccess,
    ObserveClaim,
    ObservePodConsumers,
    PublishQueryIndex,
    PublishRevision,
    RevokeAccess,
)
from context_service.domain.context.decide import decide
from context_service.domain.context.events import (
    AccessGranted,
    AccessRevoked,
    ClaimObserved,
    Consumer,
    ConsumerAttached,
    ConsumerDetached,
    ContextCreated,
    ContextDeleted,
    Grant,
    PodConsumersObserved,
    QueryIndexPublished,
    QueryRecord,
    Revision,
    RevisionPublished,
    Storage,
)
from context_service.domain.context.state import PERMISSIONS, ContextState, evolve, fold
from context_service.domain.errors import (
    ContextExistsError,
    ContextInUseError,
    ContextInvalidError,
    ContextNotFoundError,
    DomainError,
    RequestInvalidError,
)
from context_service.domain.events import ADMIN, ANONYMOUS, Event, Subject
from context_service.domain.values import canonical_quantity
from context_service.projections.audit_log.projection import actor_subject, audit_entry
from tests.unit.strategies import ALICE, BOB, CAROL, DIGESTS, EPOCH, NAME, NAMESPACE, TYPES

CALLERS = (ALICE, BOB, CAROL, ADMIN, ANONYMOUS, Subject("user", "Alice"))
actors = st.sampled_from((*CALLERS, ALICE, ADMIN))  # owners and the admin a little more often
grantees = st.sampled_from(CALLERS)
permission_sets = st.sampled_from((
    ("read",), ("administer",), ("read", "write"), ("attach", "read"), ("derive", "read"),
    ("read", "write", "attach", "derive", "administer"), ("administer", "read", "attach"),
    # refused: empty, unknown, duplicate, write/attach/derive without read
    (), ("owner",), ("read", "read"), ("write",), ("attach", "administer"), ("derive",),
))
ids = st.sampled_from((*DIGESTS, "not-a-digest"))
POD_SUBJECT = Subject("service", f"{NAMESPACE}/default")
AUDITED = (ContextCreated, AccessGranted, AccessRevoked, ConsumerAttached, ConsumerDetached)
Trail = tuple[str, Subject, Subject | None]


def grant_is_valid(permissions: tuple[str, ...]) -> bool:
    held = set(permissions)
    return (bool(permissions) and held <= set(PERMISSIONS) and len(held) == len(permissions)
            and ("read" in held or not held & {"write", "attach", "derive"}))


class ContextMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.state = ContextState()
        self.events: list[Event] = []
        self.now = EPOCH
        # the model
        self.live = False
        self.generation = 0
        self.type = ""
        self.storage_class = ""
        self.owner: Subject | None = None
        self.owner_untouched = False
        self.grants: dict[Subject, tuple[str, ...]] = {}
        self.declared: list[Consumer] = []
        self.observed: tuple[Consumer, ...] = ()
        self.history: list[str] = []
        self.current = ""
        self.index: str | None = None
        self.phase = ""
        self.observed_class = ""
        self.trail: list[Trail] = []
        # what the previous step saw, for append-only checks
        self.seen_generation = 0
        self.seen_history: tuple[Revision, ...] = ()

    # --- helpers -------------------------------------------------------------------------

    def held(self, actor: Subject) -> set[str]:
        if not self.live:
            return set()
        if actor == ADMIN:
            return set(PERMISSIONS)
        return set(self.grants.get(actor, ()))

    def execute(self, command: Command) -> list[Event] | DomainError:
        self.now += timedelta(seconds=1)
        before = self.state
        try:
            events = decide(command, self.state, self.now)
        except DomainError as error:
            assert self.state is before
            tally(f"{type(command).__name__}: {type(error).__name__}")
            return error
        tally(f"{type(command).__name__}: {len(events)} event(s)")
        for event in events:
            assert event.at == self.now
            assert event.actor == command.actor.key
            self.state = evolve(self.state, event)
        self.events.extend(events)
        return events

    @staticmethod
    def refused(result: list[Event] | DomainError, error: type[DomainError]) -> None:
        assert type(result) is error, result

    def not_found(self, result: list[Event] | DomainError) -> None:
        self.refused(result, ContextNotFoundError)

    def reset_model(self) -> None:
        self.live = False
        self.type = self.storage_class = ""
        self.owner = None
        self.owner_untouched = False
        self.grants = {}
        self.declared = []
        self.observed = ()
        self.history = []
        self.current = ""
        self.index = None
        self.phase = self.observed_class = ""

    # --- rules -----------------------------------------------------------------------------

    @initialize(created=st.booleans(), context_type=st.sampled_from(TYPES))
    def start(self, created: bool, context_type: str) -> None:
        if created:
            self.create(ALICE, context_type, "5Gi", "")

    @rule(actor=actors, context_type=st.sampled_from(TYPES),
          size=st.sampled_from(("5Gi", "1024Mi", "1.5Ki", "1e3")),
          storage_class=st.sampled_from(("", "fast")))
    def create(self, actor: Subject, context_type: str, size: str, storage_class: str) -> None:
        result = self.execute(CreateContext(
            actor=actor, name=NAME, namespace=NAMESPACE, type=context_type, backend="pvc",
            size=size, access_mode="ReadWriteOnce", storage_class=storage_class))
        if self.live:
            self.refused(result, ContextExistsError)
            return
        storage = Storage("pvc", canonical_quantity(size), "ReadWriteOnce", storage_class)
        assert result == [ContextCreated(at=self.now, actor=actor.key, namespace=NAMESPACE,
                                         name=NAME, type=context_type, storage=storage,
                                         owner=actor)]
        self.reset_model()
        self.live = True
        self.generation += 1
        self.type, self.storage_class = context_type, storage_class
        self.owner, self.owner_untouched = actor, True
        self.grants = {actor: PERMISSIONS}
        self.trail.append(("context.created", actor, None))
        # a re-create starts from nothing: no history, consumers, index or observations
        assert self.state == ContextState(
            live=True, generation=self.generation, namespace=NAMESPACE, name=NAME,
            type=context_type, storage=storage, created_at=self.now,
            grants=(Grant(actor, PERMISSIONS, self.now),))

    @rule(actor=actors, grantee=grantees, permissions=permission_sets)
    def grant(self, actor: Subject, grantee: Subject, permissions: tuple[str, ...]) -> None:
        result = self.execute(GrantAccess(actor=actor, subject=grantee, permissions=permissions))
        if "administer" not in self.held(actor):
            self.not_found(result)
        elif not grant_is_valid(permissions):
            self.refused(result, RequestInvalidError)
        else:
            assert result == [AccessGranted(at=self.now, actor=actor.key,
                                            grant=Grant(grantee, permissions, self.now))]
            self.grants[grantee] = permissions
            self.owner_untouched &= grantee != self.owner
            self.trail.append(("grant.set", actor, grantee))

    @rule(actor=actors, subject=grantees)
    def revoke(self, actor: Subject, subject: Subject) -> None:
        result = self.execute(RevokeAccess(actor=actor, subject=subject))
        if "administer" not in self.held(actor) or subject not in self.grants:
            self.not_found(result)
        else:
            assert result == [AccessRevoked(at=self.now, actor=actor.key, subject=subject)]
            del self.grants[subject]
            self.owner_untouched &= subject != self.owner
            self.trail.append(("grant.revoked", actor, subject))

    @rule(actor=actors, subject=st.one_of(st.none(), grantees),
          kind=st.sampled_from(("agent", "sandbox", "")), name=st.sampled_from(("a", "b")),
          mode=st.sampled_from(("readOnly", "readWrite", "rw")), active=st.booleans(),
          attach=st.booleans())
    def consumer(self, actor: Subject, subject: Subject | None, kind: str, name: str,
                 mode: str, active: bool, attach: bool) -> None:
        command: Command = (
            AttachConsumer(actor=actor, subject=subject, kind=kind, name=name, access_mode=mode,
                           active=active)
            if attach else DetachConsumer(actor=actor, subject=subject, kind=kind, name=name))
        result = self.execute(command)
        held = self.held(actor)
        target = subject or actor
        if "attach" not in held or (target != actor and "administer" not in held):
            self.not_found(result)
        elif not kind or (attach and mode not in ("readOnly", "readWrite")):
            self.refused(result, RequestInvalidError)
        elif attach and mode == "readWrite" and "write" not in held:
            self.not_found(result)
        else:
            self.declared = [c for c in self.declared
                             if (c.subject, c.kind, c.name) != (target, kind, name)]
            if attach:
                consumer = Consumer(target, kind, name, mode, active, True, self.now)
                assert result == [ConsumerAttached(at=self.now, actor=actor.key,
                                                   consumer=consumer)]
                self.declared.append(consumer)
            else:
                assert result == [ConsumerDetached(at=self.now, actor=actor.key,
                                                   subject=target, kind=kind, name=name)]
            action = "consumer.attached" if attach else "consumer.detached"
            self.trail.append((action, actor, target))

    @rule(actor=actors, revision_id=ids, repost=st.booleans(), files=st.integers(-1, 2**64))
    def publish_revision(self, actor: Subject, revision_id: str, repost: bool, files: int) -> None:
        revision_id = self.current if repost and self.current else revision_id
        command = PublishRevision(actor=actor, id=revision_id, created_at=EPOCH,
                                  operation="sync", files=files)
        result = self.execute(command)
        if revision_id not in DIGESTS:
            self.refused(result, RequestInvalidError)  # the body is checked before access
        elif "write" not in self.held(actor):
            self.not_found(result)
        elif revision_id == self.current:
            assert result == []  # re-posting the current id changes nothing
        else:
            revision = Revision(revision_id, EPOCH, "sync", files=files)
            assert result == [RevisionPublished(at=self.now, actor=actor.key, revision=revision,
                                                appended=True)]
            self.history.append(revision_id)
            self.current = revision_id

    @rule(actor=actors, revision=st.sampled_from(("", *DIGESTS)), current=st.booleans(),
          count=st.integers(0, 2), defect=st.sampled_from((None, None, "text", "identity")))
    def publish_index(self, actor: Subject, revision: str, current: bool, count: int,
                      defect: str | None) -> None:
        revision = self.current if current else revision
        records = tuple(
            QueryRecord(id=f"r{i}", context=NAME, type=self.type,
                        revision="other" if defect == "identity" else revision,
                        text=" " if defect == "text" else f"fact {i}")
            for i in range(count))
        result = self.execute(PublishQueryIndex(actor=actor, revision=revision, records=records))
        if "write" not in self.held(actor):
            self.not_found(result)
        elif (self.type not in ("memory", "knowledge") or not revision
              or revision != self.current or (count and defect)):
            self.refused(result, ContextInvalidError)
        else:
            assert result == [QueryIndexPublished(at=self.now, actor=actor.key,
                                                  revision=revision, records=records)]
            self.index = revision

    @rule(actor=actors, force=st.booleans())
    def delete(self, actor: Subject, force: bool) -> None:
        result = self.execute(DeleteContext(actor=actor, force=force))
        if "administer" not in self.held(actor):
            self.not_found(result)
        elif (self.declared or self.observed) and not force:
            self.refused(result, ContextInUseError)
        else:
            assert result == [ContextDeleted(at=self.now, actor=actor.key, force=force)]
            self.reset_model()

    @rule(phase=st.sampled_from(("Pending", "Bound", "Lost")),
          storage_class=st.sampled_from(("", "standard", "fast")))
    def observe_claim(self, phase: str, storage_class: str) -> None:
        result = self.execute(ObserveClaim(actor=ADMIN, phase=phase,
                                           storage_class=storage_class))
        assigned = "" if self.storage_class else storage_class
        if not self.live or (phase == self.phase
                             and (not assigned or assigned == self.observed_class)):
            assert result == []
            return
        assert result == [ClaimObserved(at=self.now, actor=ADMIN.key, phase=phase,
                                        storage_class=assigned)]
        self.phase = phase
        self.observed_class = assigned or self.observed_class

    @rule(pods=st.lists(st.sampled_from(("p-0", "p-1")), unique=True, max_size=2),
          mode=st.sampled_from(("readOnly", "readWrite")), active=st.booleans())
    def observe_pods(self, pods: list[str], mode: str, active: bool) -> None:
        consumers = tuple(Consumer(POD_SUBJECT, "pod", pod, mode, active, True, EPOCH)
                          for pod in pods)
        result = self.execute(ObservePodConsumers(actor=ADMIN, consumers=consumers))
        if not self.live or consumers == self.observed:
            assert result == []
            return
        assert result == [PodConsumersObserved(at=self.now, actor=ADMIN.key,
                                               consumers=consumers)]
        self.observed = consumers

    @rule(actor=actors)
    def probe_without_permission(self, actor: Subject) -> None:
        """Every command with a valid body answers 404 to a caller lacking its permission
        (and to everyone once the context is deleted), never another refusal."""
        other = BOB if actor != BOB else CAROL
        probes: list[tuple[str, Command]] = [
            ("administer", GrantAccess(actor=actor, subject=other, permissions=("read",))),
            ("administer", RevokeAccess(actor=actor, subject=ALICE)),
            ("administer", DeleteContext(actor=actor, force=True)),
            ("administer", AttachConsumer(actor=actor, subject=other, kind="agent", name="x",
                                          access_mode="readOnly")),
            ("attach", AttachConsumer(actor=actor, subject=None, kind="agent", name="x",
                                      access_mode="readOnly")),
            ("attach", DetachConsumer(actor=actor, subject=None, kind="agent", name="x")),
            ("write", AttachConsumer(actor=actor, subject=None, kind="agent", name="x",
                                     access_mode="readWrite")),
            ("write", PublishRevision(actor=actor, id=DIGESTS[0], created_at=EPOCH,
                                      operation="sync")),
            ("write", PublishQueryIndex(actor=actor, revision=self.current, records=())),
        ]
        held = self.held(actor)
        for permission, command in probes:
            if permission in held and (permission != "write" or "attach" in held
                                       or not isinstance(command, AttachConsumer)):
                continue
            try:
                decide(command, self.state, self.now)
            except ContextNotFoundError:
                continue
            raise AssertionError(f"{command!r} without {permission} was not refused with 404")

    # --- invariants ------------------------------------------------------------------------

    @invariant()
    def folding_everything_equals_evolving_step_by_step(self) -> None:
        assert fold(self.events) == self.state

    @invariant()
    def grants_are_sorted_unique_and_well_formed(self) -> None:
        keys = [g.subject.key for g in self.state.grants]
        assert keys == sorted(keys)
        assert len({g.subject for g in self.state.grants}) == len(keys)
        for grant in self.state.grants:
            if set(grant.permissions) & {"write", "attach", "derive"}:
                assert "read" in grant.permissions
        assert {g.subject: g.permissions for g in self.state.grants} == self.grants

    @invariant()
    def permissions_follow_the_grants(self) -> None:
        assert self.state.live == self.live
        assert self.state.generation == self.generation
        for caller in CALLERS:
            expected = tuple(p for p in PERMISSIONS if p in self.held(caller))
            assert self.state.permissions_of(caller) == (PERMISSIONS if caller == ADMIN
                                                         else expected)
        if self.owner is not None and self.owner_untouched:
            assert self.state.permissions_of(self.owner) == PERMISSIONS

    @invariant()
    def history_is_append_only_and_current_is_the_last_posted(self) -> None:
        history = self.state.revisions
        assert [r.id for r in history] == self.history
        assert self.state.current_revision == self.current
        if history:
            assert self.state.current_revision == history[-1].id
        if self.state.generation == self.seen_generation and self.live:
            assert history[: len(self.seen_history)] == self.seen_history
        self.seen_generation, self.seen_history = self.state.generation, history

    @invariant()
    def consumers_and_observations_match(self) -> None:
        assert list(self.state.declared) == self.declared
        assert self.state.observed == self.observed
        assert self.state.index_revision == self.index
        assert self.state.phase == self.phase
        assert self.state.storage_class == (self.storage_class or self.observed_class)
        combined = [f"{c.kind}/{c.name}" for c in self.state.consumers()]
        assert combined == sorted(combined)

    @invariant()
    def audit_trail_is_complete_and_in_order(self) -> None:
        trail: list[Trail] = []
        for event in self.events:
            entry = audit_entry(event)
            assert (entry is not None) == isinstance(event, AUDITED)
            if entry is not None:
                trail.append((entry[0], actor_subject(event), entry[1]))
        assert trail == self.trail
        times = [e.at for e in self.events]
        assert times == sorted(times)

    @invariant()
    def a_deleted_context_keeps_nothing_but_its_key(self) -> None:
        if not self.live:
            assert self.state == ContextState(
                generation=self.generation,
                namespace=NAMESPACE if self.generation else "",
                name=NAME if self.generation else "")


# Sequences are where the bugs hide: twice the profile's examples, each up to 50 steps long.
ContextMachine.TestCase.settings = settings(
    max_examples=2 * settings.default.max_examples, stateful_step_count=50)
TestContextMachine = ContextMachine.TestCase


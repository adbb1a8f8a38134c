"""Lifecycle decisions of the context aggregate (spec 1.11, 6.6): snapshots, observations,
retention, GC runs and clones; totality of ``decide`` over lifecycle commands."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from context_service.adapters.eventstore.mapper import decode_event
from context_service.domain.context import commands as cmd
from context_service.domain.context import events as ev
from context_service.domain.context import lifecycle as lc
from context_service.domain.context.commands import (
    Command,
    CreateContext,
    DeleteContext,
    PublishRevision,
)
from context_service.domain.context.decide import decide
from context_service.domain.context.events import (
    CloneSource,
    ContextCreated,
    Revision,
    SourceRef,
    Storage,
)
from context_service.domain.context.state import ContextState, evolve
from context_service.domain.errors import (
    ContextExistsError,
    ContextInvalidError,
    ContextNotFoundError,
    DomainError,
    RequestInvalidError,
)
from context_service.domain.events import ADMIN, Event, Subject
from context_service.domain.registry import EVENTS, event_name
from tests.unit.strategies import ALICE, BOB, DIGESTS, EPOCH, NAME, NAMESPACE, texts, timestamps

RECONCILER = Subject("service", "context-service")
REV = DIGESTS[1]


def apply(state: ContextState, command: Command, at: datetime = EPOCH) -> ContextState:
    for event in decide(command, state, at):
        state = evolve(state, event)
    return state


def live(revision: str = REV) -> ContextState:
    state = apply(ContextState(), CreateContext(
        actor=ALICE, name=NAME, namespace=NAMESPACE, type="memory", backend="pvc", size="1024Mi",
        access_mode="ReadWriteMany", storage_class="fast"))
    if revision:
        state = apply(state, PublishRevision(actor=ALICE, id=revision, created_at=EPOCH,
                                             operation="sync"))
    return state


def record(name: str = "s1", **fields: Any) -> cmd.RecordSnapshot:
    values: dict[str, Any] = dict(actor=ALICE, name=name, storage_class="fast",
                                  snapshot_class="fast-snap")
    values.update(fields)
    return cmd.RecordSnapshot(**values)


def with_snapshots(*names: str, ready: bool = True) -> ContextState:
    state = live()
    for i, name in enumerate(names):
        state = apply(state, record(name), EPOCH + timedelta(hours=i))
        if ready:
            state = apply(state, cmd.ObserveSnapshot(actor=RECONCILER, name=name, status="ready"))
    return state


def error_of(command: Command, state: ContextState) -> tuple[type[DomainError], str]:
    with pytest.raises(DomainError) as info:
        decide(command, state, EPOCH)
    return type(info.value), info.value.message


# --- snapshots --------------------------------------------------------------------------------


def test_a_snapshot_records_the_request_and_the_context_at_that_moment() -> None:
    state = live()
    events = decide(record(labels={"protected": "TRUE", "team": "r"}), state, EPOCH)
    assert events == [ev.SnapshotRecorded(
        at=EPOCH, actor=ALICE.key, name="s1", object_name=f"context-{NAME}-s1", type="memory",
        size="1Gi", access_mode="ReadWriteMany", storage_class="fast",
        snapshot_class="fast-snap", revision=REV, protected=True,
        labels={"protected": "TRUE", "team": "r"})]
    snap = evolve(state, events[0]).snapshots[0]
    assert (snap.status, snap.error, snap.created_at, snap.protected) == (
        "creating", "", EPOCH, True)


@pytest.mark.parametrize(("protected", "labels", "expected"), [
    (False, {}, False), (True, {}, True), (False, {"protected": "tRuE"}, True),
    (False, {"protected": "yes"}, False), (False, {"Protected": "true"}, False)])
def test_protection_is_forced_by_the_protected_label(protected: bool, labels: dict[str, str],
                                                     expected: bool) -> None:
    assert lc.is_protected(protected, labels) is expected


def test_a_snapshot_without_a_revision_records_none() -> None:
    [event] = decide(record(), live(revision=""), EPOCH)
    assert isinstance(event, ev.SnapshotRecorded)
    assert event.revision == ""


@pytest.mark.parametrize("name", ["", "A", "a_b", "a.b", "-a", "a-", "a" * 64])
def test_snapshot_names_are_dns_labels(name: str) -> None:
    assert error_of(record(name), live()) == (RequestInvalidError,
                                              "snapshot must be a Kubernetes name")


def test_a_63_character_snapshot_name_gets_a_hashed_object_name() -> None:
    [event] = decide(record("s" * 63), live(), EPOCH)
    assert isinstance(event, ev.SnapshotRecorded)
    assert len(event.object_name) == 63
    assert event.object_name.startswith(f"context-{NAME}-sss")


def test_snapshots_need_write_on_a_live_context() -> None:
    reader = apply(live(), _grant(BOB, ("read",)))
    assert error_of(record(actor=BOB), reader)[0] is ContextNotFoundError
    gone = apply(live(), DeleteContext(actor=ALICE))
    assert error_of(record(), gone)[0] is ContextNotFoundError


def test_a_snapshot_name_is_taken_once_per_context() -> None:
    assert error_of(record("s1"), with_snapshots("s1")) == (
        ContextExistsError, "context resource already exists")


def _grant(subject: Subject, permissions: tuple[str, ...]) -> Command:
    from context_service.domain.context.commands import GrantAccess

    return GrantAccess(actor=ALICE, subject=subject, permissions=permissions)


# --- observations -----------------------------------------------------------------------------


def test_observations_are_recorded_only_when_the_status_changes() -> None:
    state = with_snapshots("s1", ready=False)
    same = cmd.ObserveSnapshot(actor=RECONCILER, name="s1", status="creating")
    assert decide(same, state, EPOCH) == []
    failed = cmd.ObserveSnapshot(actor=RECONCILER, name="s1", status="failed", error="boom")
    state = apply(state, failed)
    assert (state.snapshots[0].status, state.snapshots[0].error) == ("failed", "boom")
    assert decide(failed, state, EPOCH) == []
    state = apply(state, cmd.ObserveSnapshot(actor=RECONCILER, name="s1", status="ready",
                                            error="ignored"))
    assert (state.snapshots[0].status, state.snapshots[0].error) == ("ready", "")


def test_observations_of_unknown_snapshots_or_deleted_contexts_record_nothing() -> None:
    observe = cmd.ObserveSnapshot(actor=RECONCILER, name="s1", status="ready")
    assert decide(observe, live(), EPOCH) == []
    gone = apply(with_snapshots("s1", ready=False), DeleteContext(actor=ALICE))
    assert decide(observe, gone, EPOCH) == []
    with pytest.raises(DomainError):
        decide(cmd.ObserveSnapshot(actor=RECONCILER, name="s1", status="Ready"), live(), EPOCH)


# --- retention --------------------------------------------------------------------------------


def retention(keep_last: int = 0, max_age: str = "", actor: Subject = ALICE) -> cmd.SetRetention:
    return cmd.SetRetention(actor=actor, keep_last=keep_last, max_age=max_age)


@pytest.mark.parametrize(("keep_last", "max_age", "stored"), [
    (3, "168h", ev.Retention(3, "168h")), (0, "1h30m", ev.Retention(0, "1h30m")),
    (2, "0", ev.Retention(2, "")), (2, "0s", ev.Retention(2, "")),
    (2, "0h0m", ev.Retention(2, "")), (0, "-0s", ev.Retention(0, "")), (0, "1ns",
                                                                          ev.Retention(0, "1ns"))])
def test_retention_is_recorded_with_zero_durations_unset(keep_last: int, max_age: str,
                                                         stored: ev.Retention) -> None:
    state = apply(live(), retention(9, "1h"))
    assert apply(state, retention(keep_last, max_age)).retention == stored


def test_an_unchanged_policy_records_nothing() -> None:
    state = apply(live(), retention(3, "24h"))
    assert decide(retention(3, "24h"), state, EPOCH) == []
    assert decide(retention(), live(), EPOCH) == []


@pytest.mark.parametrize(("keep_last", "max_age", "message"), [
    (-1, "1h", "keepLast cannot be negative"),
    (-1, "bogus", "keepLast cannot be negative"),
    (0, "-1h", "maxAge must be a non-negative duration"),
    (0, "7d", "maxAge must be a non-negative duration"),
    (0, "1 h", "maxAge must be a non-negative duration"),
    (0, "h", "maxAge must be a non-negative duration")])
def test_retention_validation(keep_last: int, max_age: str, message: str) -> None:
    assert error_of(retention(keep_last, max_age), live()) == (
        ContextInvalidError, f"invalid context resource: {message}")


def test_retention_needs_administer() -> None:
    state = apply(live(), _grant(BOB, ("read", "write", "attach", "derive")))
    assert error_of(retention(1, actor=BOB), state)[0] is ContextNotFoundError


# --- GC runs ----------------------------------------------------------------------------------


def collect(dry_run: bool = False, clones: tuple[CloneSource, ...] = ()) -> cmd.CollectSnapshots:
    return cmd.CollectSnapshots(actor=ALICE, dry_run=dry_run, clones=clones)


def test_a_gc_run_records_what_it_deleted_and_kept() -> None:
    state = apply(with_snapshots("s1", "s2", "s3"), retention(1))
    now = EPOCH + timedelta(days=1)
    assert decide(collect(dry_run=True), state, now) == []
    [event] = decide(collect(), state, now)
    assert event == ev.SnapshotsCollected(at=now, actor=ALICE.key, deleted=("s1", "s2"),
                                          kept=("s3",), keep_last=1, max_age="")
    after = evolve(state, event)
    assert [s.name for s in after.snapshots] == ["s3"]
    assert [s.name for s in after.last_collection] == ["s1", "s2"]


def test_a_gc_run_keeps_what_a_clone_references() -> None:
    state = apply(with_snapshots("s1", "s2"), retention(1))
    [event] = decide(collect(clones=(CloneSource(NAME, "s1", ""),)), state, EPOCH)
    assert isinstance(event, ev.SnapshotsCollected)
    assert (event.deleted, event.kept) == ((), ("s1", "s2"))


def test_a_gc_run_without_a_policy_keeps_everything_and_is_still_recorded() -> None:
    [event] = decide(collect(), with_snapshots("s1"), EPOCH)
    assert isinstance(event, ev.SnapshotsCollected)
    assert (event.deleted, event.kept) == ((), ("s1",))


def test_the_deleted_object_is_observed_once_its_name_is_free() -> None:
    state = apply(apply(with_snapshots("s1"), retention(0, "1ns")), collect(),
                  EPOCH + timedelta(days=2))
    gone = cmd.ObserveSnapshotObjectDeleted(actor=RECONCILER, name="s1",
                                           object_name=f"context-{NAME}-s1")
    assert len(decide(gone, state, EPOCH)) == 1
    assert apply(state, gone) == state
    retaken = apply(state, record("s1"))
    assert decide(gone, retaken, EPOCH) == []


# --- clones -----------------------------------------------------------------------------------


def test_only_a_ready_snapshot_can_be_cloned() -> None:
    state = with_snapshots("s1", ready=False)
    with pytest.raises(ContextNotFoundError):
        lc.clone_source(state, "nope")
    with pytest.raises(ContextInvalidError) as info:
        lc.clone_source(state, "s1")
    assert info.value.message == 'invalid context resource: snapshot "s1" is not ready'
    ready = apply(state, cmd.ObserveSnapshot(actor=RECONCILER, name="s1", status="ready"))
    assert lc.clone_source(ready, "s1").name == "s1"


def clone(source: ev.SnapshotRecord, name: str = "copy", actor: Subject = BOB) -> cmd.CreateClone:
    return cmd.CreateClone(actor=actor, name=name, namespace=NAMESPACE, source=NAME,
                          snapshot=source)


def test_a_clone_is_created_from_the_snapshot_with_a_one_entry_history() -> None:
    source = with_snapshots("s1").snapshots[0]
    now = EPOCH + timedelta(days=3)
    [event] = decide(clone(source), ContextState(), now)
    assert event == ContextCreated(
        at=now, actor=BOB.key, namespace=NAMESPACE, name="copy", type="memory",
        storage=Storage("pvc", "1Gi", "ReadWriteMany", "fast"), owner=BOB,
        clone_of=CloneSource(NAME, "s1", REV, f"context-{NAME}-s1"),
        revision=Revision(REV, now, "clone", "context-service",
                          sources=(SourceRef(NAME, "memory", REV),)))
    state = evolve(ContextState(), event)
    assert state.current_revision == REV
    assert state.permissions_of(BOB) == ("read", "write", "attach", "derive", "administer")


def test_a_clone_of_a_snapshot_without_revision_has_no_history() -> None:
    state = apply(live(revision=""), record("s1"))
    [event] = decide(clone(state.snapshots[0]), ContextState(), EPOCH)
    assert isinstance(event, ContextCreated)
    assert (event.revision, event.clone_of) == (
        None, CloneSource(NAME, "s1", "", f"context-{NAME}-s1"))


def test_a_clone_target_must_be_a_free_context_name() -> None:
    source = with_snapshots("s1").snapshots[0]
    assert error_of(clone(source), live()) == (ContextExistsError,
                                               "context resource already exists")
    assert error_of(clone(source, "Copy"), ContextState()) == (
        RequestInvalidError, "name must be a lowercase Kubernetes name no longer than 50 "
                             "characters")
    assert error_of(clone(source, "a" * 51), ContextState())[0] is RequestInvalidError


def test_clone_body_checks_run_name_first() -> None:
    with pytest.raises(RequestInvalidError) as info:
        lc.validate_clone("Bad", "Bad")
    assert info.value.message.startswith("name must")
    with pytest.raises(RequestInvalidError) as info:
        lc.validate_clone("good", "a" * 64)
    assert info.value.message == "snapshot must be a Kubernetes name"


# --- totality ---------------------------------------------------------------------------------

actors = st.sampled_from((ALICE, BOB, ADMIN, RECONCILER))
records = st.builds(
    ev.SnapshotRecord, name=texts, object_name=texts, type=texts, size=texts, access_mode=texts,
    storage_class=texts, snapshot_class=texts, created_at=timestamps, revision=texts,
    protected=st.booleans(), labels=st.dictionaries(texts, texts, max_size=2),
    status=st.sampled_from(lc.STATUSES), error=texts)
lifecycle_commands: st.SearchStrategy[Command] = st.one_of(
    st.builds(cmd.RecordSnapshot, actor=actors, name=st.one_of(st.just("s1"), texts),
              storage_class=texts, snapshot_class=texts, protected=st.booleans(),
              labels=st.dictionaries(texts, texts, max_size=2)),
    st.builds(cmd.ObserveSnapshot, actor=actors, name=st.sampled_from(("s1", "s2")),
              status=st.one_of(st.sampled_from(lc.STATUSES), texts), error=texts),
    st.builds(cmd.ObserveSnapshotObjectDeleted, actor=actors, name=texts, object_name=texts),
    st.builds(cmd.SetRetention, actor=actors, keep_last=st.integers(-3, 5),
              max_age=st.one_of(st.sampled_from(("", "0", "1h", "-1h", "1.5h", "x")), texts)),
    st.builds(cmd.CollectSnapshots, actor=actors, dry_run=st.booleans(),
              clones=st.lists(st.builds(CloneSource, texts, texts, texts), max_size=2)
              .map(tuple)),
    st.builds(cmd.CreateClone, actor=actors, name=st.one_of(st.just("copy"), texts),
              namespace=st.just(NAMESPACE), source=st.just(NAME), snapshot=records),
)


@given(st.lists(lifecycle_commands, max_size=12), timestamps)
def test_lifecycle_decisions_are_total_and_fold_consistently(commands: list[Command],
                                                              now: datetime) -> None:
    state = with_snapshots("s1", "s2")
    for command in commands:
        try:
            events = decide(command, state, now)
        except DomainError as error:
            assert error.message
            continue
        for event in events:
            assert isinstance(event, Event)
            assert EVENTS[event_name(event)] is type(event)
            assert decode_event(event_name(event), msgspec.json.encode(event)) == event
            state = evolve(state, event)
        names = [s.name for s in state.snapshots]
        assert len(names) == len(set(names))

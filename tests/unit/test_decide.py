"""``decide`` is total, and its checks run in the documented order (spec 1.5-1.9, 2.2, 2.5, 2.6).

The order tests inject a random set of defects into an otherwise valid command; the answer must
always be the defect that comes first in the spec's order, whatever else is wrong.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from context_service.adapters.eventstore.mapper import decode_event
from context_service.domain.context.commands import (
    AttachConsumer,
    Command,
    CreateContext,
    DeleteContext,
    DetachConsumer,
    GrantAccess,
    PublishQueryIndex,
    PublishRevision,
    RevokeAccess,
)
from context_service.domain.context.decide import decide
from context_service.domain.context.events import (
    AccessGranted,
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
    SourceRef,
    Storage,
)
from context_service.domain.context.state import PERMISSIONS, ContextState, evolve
from context_service.domain.errors import (
    ContextExistsError,
    ContextInUseError,
    ContextInvalidError,
    ContextNotFoundError,
    DomainError,
    RequestInvalidError,
)
from context_service.domain.events import Event, Subject
from context_service.domain.registry import EVENTS, event_name
from tests.unit.strategies import (
    ALICE,
    BOB,
    DIGESTS,
    EPOCH,
    NAME,
    NAMESPACE,
    arbitrary_commands,
    plausible_commands,
    reachable_states,
    run,
    timestamps,
)

NOW = EPOCH + timedelta(hours=1)
Outcome = tuple[type[DomainError], str] | list[Event]


def outcome(command: Command, state: ContextState) -> Outcome:
    try:
        return decide(command, state, NOW)
    except DomainError as error:
        return type(error), error.message


def live(context_type: str = "memory", **grants: tuple[str, ...]) -> ContextState:
    """A context created by alice, plus one grant for each named subject (``user_x=perms``)."""
    state = evolve(ContextState(), ContextCreated(
        at=EPOCH, actor=ALICE.key, namespace=NAMESPACE, name=NAME, type=context_type,
        storage=Storage("pvc", "5Gi", "ReadWriteOnce"), owner=ALICE))
    for key, permissions in grants.items():
        kind, _, name = key.partition("_")
        grant = Grant(Subject(kind, name), permissions, EPOCH)
        state = evolve(state, AccessGranted(at=EPOCH, actor=ALICE.key, grant=grant))
    return state


def deleted() -> ContextState:
    return evolve(live(), ContextDeleted(at=EPOCH, actor=ALICE.key, force=False))


# --- totality -------------------------------------------------------------------------------

mixed_states = st.one_of(
    reachable_states(),
    st.lists(st.one_of(plausible_commands, plausible_commands, arbitrary_commands), max_size=20)
    .map(run),
)


@given(state=mixed_states, command=arbitrary_commands, now=timestamps)
def test_decide_is_total(state: ContextState, command: Command, now: datetime) -> None:
    """Events or a DomainError, never anything else; events are well-formed and storable."""
    try:
        events = decide(command, state, now)
    except DomainError as error:
        assert isinstance(error.message, str)
        assert error.message
        return
    assert isinstance(events, list)
    for event in events:
        assert isinstance(event, Event)
        assert EVENTS[event_name(event)] is type(event)
        assert event.at == now
        assert event.actor == command.actor.key
        assert decode_event(event_name(event), msgspec.json.encode(event)) == event
        state = evolve(state, event)


@given(state=mixed_states, command=arbitrary_commands)
def test_decide_is_deterministic(state: ContextState, command: Command) -> None:
    assert outcome(command, state) == outcome(command, state)


# --- create: spec 2.2, then name availability ----------------------------------------------

CREATE = {"name": NAME, "namespace": NAMESPACE, "type": "memory", "backend": "pvc",
          "size": "5Gi", "access_mode": "ReadWriteMany", "storage_class": ""}
CREATE_DEFECTS: list[tuple[str, list[str], str]] = [
    ("name", ["", "a" * 51, "Research", "-a", "a-", "a.b", "a_b", " a"],
     "name must be a lowercase Kubernetes name no longer than 50 characters"),
    ("namespace", ["", "a" * 64, "Team1", "team.1", "-t"],
     "namespace must be a lowercase Kubernetes name"),
    ("type", ["", "Memory", "database", " memory"],
     "type must be workspace, state, memory, knowledge, or artifacts"),
    ("backend", ["", "PVC", "nfs"], "storage.backend must be pvc"),
    ("size", ["", "0", "0Gi", "-1Gi", "abc", "1 Gi", "8Ei", "1e"],
     "storage.size must be a positive Kubernetes quantity"),
    ("access_mode", ["", "ReadOnlyMany", "readwriteonce", "ReadWriteOncePod"],
     "storage.accessMode must be ReadWriteOnce or ReadWriteMany"),
]


@given(st.sets(st.integers(0, len(CREATE_DEFECTS)), min_size=1), st.data())
def test_create_first_failure_wins(defects: set[int], data: st.DataObject) -> None:
    fields = dict(CREATE)
    for index in defects & set(range(len(CREATE_DEFECTS))):
        field, values, _ = CREATE_DEFECTS[index]
        fields[field] = data.draw(st.sampled_from(values), label=field)
    exists = len(CREATE_DEFECTS) in defects
    result = outcome(CreateContext(actor=BOB, **fields), live() if exists else ContextState())
    first = min(defects)
    if first < len(CREATE_DEFECTS):
        assert result == (RequestInvalidError, CREATE_DEFECTS[first][2])
    else:
        assert result == (ContextExistsError, "context resource already exists")


@pytest.mark.parametrize("state", [ContextState(), deleted()], ids=["new", "after-delete"])
def test_create_records_the_canonical_size_and_the_owner(state: ContextState) -> None:
    command = CreateContext(actor=BOB, **{**CREATE, "size": "1024Mi", "storage_class": "Any!"})
    [event] = decide(command, state, NOW)
    assert event == ContextCreated(
        at=NOW, actor="agent:bob", namespace=NAMESPACE, name=NAME, type="memory",
        storage=Storage("pvc", "1Gi", "ReadWriteMany", "Any!"), owner=BOB)
    after = evolve(state, event)
    assert after.permissions_of(BOB) == PERMISSIONS
    assert after.generation == state.generation + 1


# --- grant: administer first, then spec 2.6 ------------------------------------------------

@given(st.sets(st.integers(0, 4), min_size=1), st.data())
def test_grant_first_failure_wins(defects: set[int], data: st.DataObject) -> None:
    # 0 no administer, 1 invalid subject, 2 unsupported, 3 duplicate, 4 write without read
    actor = BOB if 0 in defects else ALICE
    subject = Subject("agent", "helper")
    if 1 in defects:
        subject = data.draw(st.sampled_from(
            [Subject("robot", "x"), Subject("", "x"), Subject("User", "x"), Subject("user", ""),
             Subject("user", " \t")]), label="subject")
    permissions = [] if 4 in defects else ["read"]
    permissions.append("write")
    if 2 in defects:
        permissions.append("superuser")
    if 3 in defects:
        permissions.append("write")
    result = outcome(GrantAccess(actor=actor, subject=subject, permissions=tuple(permissions)),
                     live(agent_bob=("read", "write", "attach", "derive")))
    expected = {
        0: (ContextNotFoundError, "context resource not found"),
        1: (RequestInvalidError, "grant requires a valid subject and permissions"),
        2: (RequestInvalidError, 'unsupported permission "superuser"'),
        3: (RequestInvalidError, 'duplicate permission "write"'),
        4: (RequestInvalidError, 'permission "write" requires read'),
    }
    assert result == expected[min(defects)]


@pytest.mark.parametrize(
    ("subject", "permissions", "message"),
    [
        (None, ("read",), "grant requires a valid subject and permissions"),
        (Subject("agent", "x"), (), "grant requires a valid subject and permissions"),
        (Subject("robot", "x"), ("bogus",), "grant requires a valid subject and permissions"),
        (Subject("agent", "x"), ("read", "read", "bogus"), 'unsupported permission "bogus"'),
        (Subject("agent", "x"), ("Read",), 'unsupported permission "Read"'),
        (Subject("agent", "x"), ("",), 'unsupported permission ""'),
        (Subject("agent", "x"), ('a"b\u00e9',), 'unsupported permission "a\\"b\u00e9"'),
        (Subject("agent", "x"), ("attach", "read", "attach", "read"),
         'duplicate permission "attach"'),
        (Subject("agent", "x"), ("derive", "attach", "write"), 'permission "write" requires read'),
        (Subject("agent", "x"), ("derive", "attach"), 'permission "attach" requires read'),
        (Subject("agent", "x"), ("administer", "derive"), 'permission "derive" requires read'),
    ],
)
def test_grant_validation_messages(
        subject: Subject | None, permissions: tuple[str, ...], message: str) -> None:
    assert outcome(GrantAccess(actor=ALICE, subject=subject, permissions=permissions),
                   live()) == (RequestInvalidError, message)


def test_grant_replaces_and_keeps_the_client_order() -> None:
    command = GrantAccess(actor=ALICE, subject=BOB, permissions=("administer",))
    [event] = decide(command, live(agent_bob=("read", "write")), NOW)
    assert event == AccessGranted(at=NOW, actor="user:alice",
                                  grant=Grant(BOB, ("administer",), NOW))
    order = ("attach", "read")
    [event] = decide(GrantAccess(actor=ALICE, subject=BOB, permissions=order), live(), NOW)
    assert isinstance(event, AccessGranted)
    assert event.grant.permissions == order


# --- revoke: administer, valid subject, existing grant ---------------------------------------

@given(st.sets(st.integers(0, 2), min_size=1))
def test_revoke_first_failure_wins(defects: set[int]) -> None:
    actor = BOB if 0 in defects else ALICE
    subject = Subject("robot", "carol") if 1 in defects else Subject("workload", "carol")
    state = live(agent_bob=("read",)) if 2 in defects else live(workload_carol=("read",))
    expected = {
        0: (ContextNotFoundError, "context resource not found"),
        1: (RequestInvalidError, "valid subject is required"),
        2: (ContextNotFoundError, "context resource not found"),
    }
    assert outcome(RevokeAccess(actor=actor, subject=subject), state) == expected[min(defects)]


# --- revision: spec 2.5 before write permission --------------------------------------------

GOOD_SOURCE = SourceRef("project-state", "state", DIGESTS[1])
REVISION_DEFECTS = [
    (RequestInvalidError, "revision id must be a lowercase SHA-256 digest"),
    (RequestInvalidError, "revision creation time is required"),
    (RequestInvalidError, "revision operation is required"),
    (RequestInvalidError, "revision sources require context and type"),
    (RequestInvalidError, "source revision must be a lowercase SHA-256 digest"),
    (ContextNotFoundError, "context resource not found"),  # no write
    (ContextNotFoundError, "context resource not found"),  # deleted
]


@given(st.sets(st.integers(0, len(REVISION_DEFECTS) - 1), min_size=1), st.data())
def test_revision_first_failure_wins(defects: set[int], data: st.DataObject) -> None:
    def pick(index: int, values: list[Any], good: Any) -> Any:
        return data.draw(st.sampled_from(values), label=str(index)) if index in defects else good

    missing = data.draw(st.sampled_from(["context", "type", "both"])) if 3 in defects else ""
    source = SourceRef(
        "" if missing in ("context", "both") else "project-state",
        "" if missing in ("type", "both") else "state",
        pick(4, ["", DIGESTS[1].upper(), DIGESTS[0][:-1], "g" * 64], DIGESTS[1]),
    )
    command = PublishRevision(
        actor=BOB if 5 in defects else ALICE,
        id=pick(0, ["", DIGESTS[1].upper(), "0" * 63, "0" * 65, " " + "0" * 63], DIGESTS[0]),
        created_at=None if 1 in defects else EPOCH,
        operation=pick(2, ["", " ", "\t\n"], "derive"),
        sources=(source,),
    )
    state = deleted() if 6 in defects else live(agent_bob=("read", "attach", "administer"))
    assert outcome(command, state) == REVISION_DEFECTS[min(defects)]


def test_revision_sources_are_checked_one_after_another() -> None:
    bad_revision = SourceRef("a", "state", "nope")
    no_type = SourceRef("b", "", DIGESTS[0])
    base = PublishRevision(actor=ALICE, id=DIGESTS[0], created_at=EPOCH, operation="sync")
    cases = [((bad_revision, no_type), "source revision must be a lowercase SHA-256 digest"),
             ((no_type, bad_revision), "revision sources require context and type"),
             ((GOOD_SOURCE, no_type), "revision sources require context and type")]
    for sources, message in cases:
        command = msgspec.structs.replace(base, sources=sources)
        assert outcome(command, live()) == (RequestInvalidError, message)


def test_revision_body_is_validated_before_the_context_is_looked_up() -> None:
    command = PublishRevision(actor=BOB, id="nope", created_at=EPOCH, operation="sync")
    for state in (ContextState(), deleted(), live()):
        assert outcome(command, state) == (
            RequestInvalidError, "revision id must be a lowercase SHA-256 digest")


def test_revision_appends_then_reposting_the_current_id_is_a_no_op() -> None:
    command = PublishRevision(actor=ALICE, id=DIGESTS[0], created_at=EPOCH, operation="sync",
                              producer="contextctl", parameters={"k": "v"},
                              sources=(GOOD_SOURCE,), files=3, bytes=2048)
    [event] = decide(command, live(), NOW)
    assert isinstance(event, RevisionPublished)
    assert event.appended
    assert event.revision.sources == (GOOD_SOURCE,)
    assert (event.revision.files, event.revision.bytes) == (3, 2048)
    assert decide(command, evolve(live(), event), NOW) == []


# --- consumers: spec 1.9 steps 1 to 7 --------------------------------------------------------

@given(st.sets(st.integers(0, 4), min_size=1), st.booleans())
def test_consumer_first_failure_wins(defects: set[int], attach: bool) -> None:
    # 0 no attach, 1 other subject without administer, 2 empty kind, 3 bad accessMode,
    # 4 readWrite without write
    if not attach:
        defects = defects & {0, 1, 2}
        if not defects:
            defects = {2}
    if 3 in defects:
        defects.discard(4)
    held = {"read", "write", "attach", "administer"} - {
        p for d, p in ((0, "attach"), (1, "administer"), (4, "write")) if d in defects}
    state = live(agent_bob=tuple(p for p in PERMISSIONS if p in held))
    subject = Subject("workload", "carol") if 1 in defects else None
    kind = "" if 2 in defects else "sandbox"
    mode = "rw" if 3 in defects else "readWrite" if 4 in defects else "readOnly"
    command: Command = (
        AttachConsumer(actor=BOB, subject=subject, kind=kind, name="s-1", access_mode=mode)
        if attach else DetachConsumer(actor=BOB, subject=subject, kind=kind, name="s-1"))
    expected = {
        0: (ContextNotFoundError, "context resource not found"),
        1: (ContextNotFoundError, "context resource not found"),
        2: (RequestInvalidError, "consumer subject, kind, and name are required"),
        3: (RequestInvalidError, "consumer accessMode must be readOnly or readWrite"),
        4: (ContextNotFoundError, "context resource not found"),
    }
    assert outcome(command, state) == expected[min(defects)]


@pytest.mark.parametrize(
    ("subject", "kind", "name", "expected"),
    [
        (None, "agent", "x", BOB),
        (Subject("", ""), "agent", "x", BOB),
        (BOB, "agent", "x", BOB),
        (Subject("agent", ""), "agent", "x", "consumer subject, kind, and name are required"),
        (Subject("", "bob"), "agent", "x", "consumer subject, kind, and name are required"),
        (None, "agent", "", "consumer subject, kind, and name are required"),
        (None, "", "x", "consumer subject, kind, and name are required"),
    ],
)
def test_consumer_subject_defaults_to_the_caller(
        subject: Subject | None, kind: str, name: str, expected: Subject | str) -> None:
    state = live(agent_bob=("read", "attach", "administer"))
    command = AttachConsumer(actor=BOB, subject=subject, kind=kind, name=name,
                             access_mode="readOnly")
    result = outcome(command, state)
    if isinstance(expected, str):
        assert result == (RequestInvalidError, expected)
        return
    assert result == [ConsumerAttached(at=NOW, actor="agent:bob", consumer=Consumer(
        expected, kind, name, "readOnly", active=False, desired=True, since=NOW))]


def test_detaching_an_absent_consumer_is_still_recorded() -> None:
    command = DetachConsumer(actor=ALICE, subject=None, kind="agent", name="ghost")
    assert decide(command, live(), NOW) == [
        ConsumerDetached(at=NOW, actor="user:alice", subject=ALICE, kind="agent", name="ghost")]


# --- query index: write, then the four domain checks of spec 1.7 ---------------------------

@given(st.sets(st.integers(0, 4), min_size=1))
def test_query_index_first_failure_wins(defects: set[int]) -> None:
    state = live("state" if 1 in defects else "knowledge", agent_bob=("read", "write"))
    state = evolve(state, RevisionPublished(at=EPOCH, actor=ALICE.key, appended=True,
                                            revision=_revision(DIGESTS[0])))
    revision = DIGESTS[1] if 2 in defects else DIGESTS[0]
    record = QueryRecord(id="" if 3 in defects else "r1", context=NAME, type=state.type,
                         revision="other" if 4 in defects else revision,
                         text=" " if 3 in defects else "fact")
    actor = Subject("agent", "eve") if 0 in defects else BOB
    result = outcome(PublishQueryIndex(actor=actor, revision=revision, records=(record,)), state)
    prefix = "invalid context resource: "
    expected = {
        0: (ContextNotFoundError, "context resource not found"),
        1: (ContextInvalidError, prefix + "query indexes require memory or knowledge contexts"),
        2: (ContextInvalidError,
            prefix + "query index revision must match the current context revision"),
        3: (ContextInvalidError, prefix + "query records require id and text"),
        4: (ContextInvalidError, prefix + "query record identity does not match its context"),
    }
    assert result == expected[min(defects)]


def test_an_empty_query_index_is_valid() -> None:
    state = evolve(live(), RevisionPublished(at=EPOCH, actor=ALICE.key, appended=True,
                                             revision=_revision(DIGESTS[2])))
    command = PublishQueryIndex(actor=ALICE, revision=DIGESTS[2], records=())
    assert decide(command, state, NOW) == [
        QueryIndexPublished(at=NOW, actor="user:alice", revision=DIGESTS[2], records=())]


def _revision(digest: str) -> Revision:
    return Revision(digest, EPOCH, "sync")


# --- delete: administer, then in use unless forced -------------------------------------------

def test_delete_lists_every_consumer_in_order() -> None:
    state = live()
    for kind, name in (("sandbox", "b"), ("agent", "z")):
        [event] = decide(AttachConsumer(actor=ALICE, subject=None, kind=kind, name=name,
                                        access_mode="readOnly"), state, NOW)
        state = evolve(state, event)
    pod = PodConsumersObserved(at=NOW, actor="service:context-service-admin", consumers=(
        msgspec.structs.replace(state.declared[0], kind="pod", name="p-0"),
        msgspec.structs.replace(state.declared[0], kind="agent", name="z")))
    state = evolve(state, pod)
    assert outcome(DeleteContext(actor=BOB), state) == (
        ContextNotFoundError, "context resource not found")
    assert outcome(DeleteContext(actor=ALICE), state) == (
        ContextInUseError,
        f"context resource is in use: {NAME} is used by agent/z, agent/z, pod/p-0, sandbox/b; "
        "detach consumers or use force deletion")
    assert decide(DeleteContext(actor=ALICE, force=True), state, NOW) == [
        ContextDeleted(at=NOW, actor="user:alice", force=True)]

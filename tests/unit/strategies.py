"""Hypothesis strategies for the context aggregate: adversarial commands built field by field over
the command structs, plausible commands over a small universe, and states reached through
``decide`` itself (never hand-assembled, so every state is one the service can be in).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import strategies as st

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
from context_service.domain.context.events import Consumer, QueryRecord, SourceRef
from context_service.domain.context.state import PERMISSIONS, ContextState, evolve
from context_service.domain.errors import DomainError
from context_service.domain.events import ADMIN, ANONYMOUS, Subject

NAMESPACE = "team1"
NAME = "research-memory"
TYPES = ("workspace", "state", "memory", "knowledge", "artifacts")
DIGESTS = ("0" * 64, "0123456789abcdef" * 4, "f" * 64)
ALICE = Subject("user", "alice")
BOB = Subject("agent", "bob")
CAROL = Subject("workload", "carol")
ACTORS = (ALICE, BOB, CAROL, ADMIN, ANONYMOUS)
EPOCH = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)

# Strings that sit on (or next to) a rule's boundary, mixed into otherwise arbitrary text.
EDGE_STRINGS = (
    "", " ", "\t", "\n", "\x00", "a", "A", "-", "a-", "-a", "a.b", "a_b", "a" * 50, "a" * 51,
    "a" * 63, "a" * 64, "a" * 254, NAME, NAMESPACE, "Team1", "\u00e9", "\u0663", "\ud7ff",
    "5Gi", "1024Mi", "0", "0Gi", "-1Gi", "1 Gi", "1E", "1E3", "1e400", "1e-400", "8Ei", ".5",
    "5.", "9223372036854775807", "1.5Ki", "0.0000000001",
    *TYPES, "pvc", "nfs", "ReadWriteOnce", "ReadWriteMany", "ReadOnlyMany",
    *PERMISSIONS, "Read", "readOnly", "readWrite", "user", "agent", "workload", "service",
    "robot", "context-service-admin", "anonymous", "alice", "Bound", "Pending", "Lost",
    *DIGESTS, DIGESTS[1].upper(), DIGESTS[0][:-1], "sync", '"', "\\", "{}",
)
texts = st.one_of(st.sampled_from(EDGE_STRINGS), st.text(max_size=80))
quantities = st.from_regex(
    r"[+-]?[0-9]{0,20}(\.[0-9]{0,12})?(Ki|Mi|Gi|Ti|Pi|Ei|[eE][+-]?[0-9]{1,3}|[numkMGTPE])?",
    fullmatch=True)


def mostly(*valid: str) -> st.SearchStrategy[str]:
    """Mostly a valid value, so that later checks are reached; anything otherwise."""
    choice = st.sampled_from(valid)
    return st.one_of(choice, choice, choice, texts)


kinds = mostly("user", "agent", "workload", "service", "", "User")
subjects = st.one_of(st.sampled_from((*ACTORS, Subject("", ""), Subject("user", " "))),
                     st.builds(Subject, kinds, texts))
callers = st.one_of(st.sampled_from(ACTORS), subjects)
optional_subjects = st.one_of(st.none(), subjects)
timestamps = st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30),
                          timezones=st.just(UTC))
optional_timestamps = st.one_of(st.none(), timestamps, timestamps)
big_ints = st.one_of(st.integers(-(2**70), 2**70), st.sampled_from((0, -1, 2**63, 2**64)))
digests = mostly(*DIGESTS)
sources = st.builds(SourceRef, mostly("project-state"), mostly(*TYPES), digests)
records = st.builds(QueryRecord, id=mostly("r1", "r2"), context=mostly(NAME), type=mostly(*TYPES),
                    revision=digests, text=mostly("a fact"), title=texts,
                    keywords=st.lists(texts, max_size=3).map(tuple), source=sources, file=texts)
consumers = st.builds(Consumer, subjects, mostly("pod", "agent"), texts,
                      mostly("readOnly", "readWrite"), st.booleans(), st.booleans(), timestamps)
permission_lists = st.lists(mostly(*PERMISSIONS, *PERMISSIONS, "Read"), max_size=7).map(tuple)

arbitrary_commands: st.SearchStrategy[Command] = st.one_of(
    st.builds(CreateContext, actor=callers, name=mostly(NAME, "a", "a" * 50),
              namespace=mostly(NAMESPACE), type=mostly(*TYPES), backend=mostly("pvc"),
              size=st.one_of(st.just("5Gi"), quantities, texts),
              access_mode=mostly("ReadWriteOnce", "ReadWriteMany"), storage_class=texts),
    st.builds(GrantAccess, actor=callers, subject=optional_subjects,
              permissions=permission_lists),
    st.builds(RevokeAccess, actor=callers, subject=subjects),
    st.builds(AttachConsumer, actor=callers, subject=optional_subjects,
              kind=mostly("agent", "sandbox"), name=mostly("a", "b"),
              access_mode=mostly("readOnly", "readWrite"), active=st.booleans()),
    st.builds(DetachConsumer, actor=callers, subject=optional_subjects,
              kind=mostly("agent", "sandbox"), name=mostly("a", "b")),
    st.builds(PublishRevision, actor=callers, id=digests, created_at=optional_timestamps,
              operation=mostly("sync", "clone"), producer=texts,
              parameters=st.dictionaries(texts, texts, max_size=3),
              sources=st.lists(sources, max_size=3).map(tuple), files=big_ints, bytes=big_ints),
    st.builds(PublishQueryIndex, actor=callers, revision=digests,
              records=st.lists(records, max_size=3).map(tuple)),
    st.builds(DeleteContext, actor=callers, force=st.booleans()),
    st.builds(ObserveClaim, actor=callers, phase=mostly("Pending", "Bound"), storage_class=texts),
    st.builds(ObservePodConsumers, actor=callers,
              consumers=st.lists(consumers, max_size=3).map(tuple)),
    st.builds(Command, actor=callers),
)

# --- plausible commands: a small universe, so that most of them succeed ---------------------

actors = st.sampled_from(ACTORS)
grantees = st.sampled_from((ALICE, BOB, CAROL, ANONYMOUS, Subject("user", "Alice")))
valid_permission_sets = st.sampled_from((
    ("read",), ("administer",), ("read", "write"), ("attach", "read"),
    ("read", "write", "attach", "derive", "administer"), ("read", "derive", "administer"),
))
pod_consumers = st.builds(Consumer, subject=st.just(Subject("service", f"{NAMESPACE}/default")),
                          kind=st.just("pod"), name=st.sampled_from(("p-0", "p-1")),
                          access_mode=st.sampled_from(("readOnly", "readWrite")),
                          active=st.booleans(), desired=st.just(True), since=st.just(EPOCH))


def _record(revision: str, context_type: str, index: int) -> QueryRecord:
    return QueryRecord(id=f"r{index}", context=NAME, type=context_type, revision=revision,
                       text=f"fact {index}")


plausible_creates = st.builds(
    CreateContext, actor=actors, name=st.just(NAME), namespace=st.just(NAMESPACE),
    type=st.sampled_from(TYPES), backend=st.just("pvc"),
    size=st.sampled_from(("5Gi", "1024Mi", "1.5G")),
    access_mode=st.sampled_from(("ReadWriteOnce", "ReadWriteMany")),
    storage_class=st.sampled_from(("", "fast")))

plausible_commands: st.SearchStrategy[Command] = st.one_of(
    plausible_creates,
    st.builds(GrantAccess, actor=actors, subject=grantees, permissions=valid_permission_sets),
    st.builds(RevokeAccess, actor=actors, subject=grantees),
    st.builds(AttachConsumer, actor=actors, subject=st.one_of(st.none(), grantees),
              kind=st.sampled_from(("agent", "sandbox")), name=st.sampled_from(("a", "b")),
              access_mode=st.sampled_from(("readOnly", "readWrite")), active=st.booleans()),
    st.builds(DetachConsumer, actor=actors, subject=st.one_of(st.none(), grantees),
              kind=st.sampled_from(("agent", "sandbox")), name=st.sampled_from(("a", "b"))),
    st.builds(PublishRevision, actor=actors, id=st.sampled_from(DIGESTS),
              created_at=st.just(EPOCH), operation=st.just("sync")),
    st.builds(lambda actor, revision, context_type, count: PublishQueryIndex(
        actor=actor, revision=revision,
        records=tuple(_record(revision, context_type, i) for i in range(count))),
        actors, st.sampled_from(DIGESTS), st.sampled_from(TYPES), st.integers(0, 2)),
    st.builds(DeleteContext, actor=actors, force=st.booleans()),
    st.builds(ObserveClaim, actor=st.just(ADMIN), phase=st.sampled_from(("Pending", "Bound")),
              storage_class=st.sampled_from(("", "standard"))),
    st.builds(ObservePodConsumers, actor=st.just(ADMIN),
              consumers=st.lists(pod_consumers, max_size=2, unique_by=lambda c: c.name)
              .map(tuple)),
)


def run(commands: list[Command], state: ContextState | None = None) -> ContextState:
    """Apply commands one by one through ``decide``; refused commands change nothing."""
    state = state or ContextState()
    for step, command in enumerate(commands):
        try:
            events = decide(command, state, EPOCH + timedelta(seconds=step))
        except DomainError:
            continue
        for event in events:
            state = evolve(state, event)
    return state


@st.composite
def reachable_states(draw: st.DrawFn) -> ContextState:
    """A state reached from nothing by plausible commands; most draws start with a create."""
    prefix: list[Command] = []
    if draw(st.integers(0, 9)):
        prefix.append(draw(plausible_creates))
    return run(prefix + draw(st.lists(plausible_commands, max_size=25)))

"""The context_pack aggregate (a release recorded once per replay id, replay runs only while it
has not expired), the readable-now and active-set rules of packs, and CS_REPLAY_RETENTION."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from context_service.config import Settings, SettingsError
from context_service.domain.context.events import Grant
from context_service.domain.context.state import ContextState
from context_service.domain.context_pack.commands import RecordReplay, ReleasePack
from context_service.domain.context_pack.decide import decide
from context_service.domain.context_pack.errors import ReplayExpiredError, ReplayNotFoundError
from context_service.domain.context_pack.events import (
    ContextPackReleased,
    ContextPackReplayed,
    ItemSource,
    PackParameters,
    ReleasedItem,
)
from context_service.domain.context_pack.readable import (
    BoundToOtherSetError,
    active_set,
    readable_collections,
)
from context_service.domain.context_pack.state import ReplayState, evolve, fold
from context_service.domain.context_set.state import ContextSetState
from context_service.domain.errors import ContextSetNotFoundError
from context_service.domain.events import ADMIN, Subject
from context_service.domain.registry import EVENTS

T0 = datetime(2025, 6, 12, 10, 15, 30, tzinfo=UTC)
ALICE = Subject("user", "alice")


def released(replay_id: str = "rp_" + "a" * 32) -> ContextPackReleased:
    return ContextPackReleased(
        at=T0, actor="user:alice", replay_id=replay_id, pack_id="pk_" + "b" * 32,
        credential_id="3f9a1c0b7d2e4a68", created_by="user:alice", task_sha256="c" * 64,
        parameters=PackParameters(max_tokens=2000, max_latency_ms=15000,
                                  coverage="best_effort", collection_ids=(), document_ids=(),
                                  sources=("passages", "graph", "documents"),
                                  retrieval="hybrid", context_set_id="",
                                  context_set_version=0),
        valid_time=T0, system_time=T0, position=1842, engine_version="pack-engine/1",
        items=(ReleasedItem(id="psg:c/r", class_="evidence", hash="sha256:" + "d" * 64,
                            source=ItemSource(kind="passage", collection_id="c",
                                              document_id="c/f", record_id="r",
                                              revision="e" * 64)),),
        merkle_root="sha256:" + "f" * 64, complete=True, missing=(), used_tokens=42,
        expires_at=T0)


def run(replay_id: str = "rp_" + "a" * 32) -> ContextPackReplayed:
    return ContextPackReplayed(at=T0, actor="user:alice", replay_id=replay_id, mode="verify",
                               credential_id="3f9a1c0b7d2e4a68", created_by="user:alice",
                               position=1900, engine_version="pack-engine/1", unchanged=1,
                               changed=0, unavailable=0, added=0, removed=0,
                               merkle_root="sha256:" + "f" * 64)


def test_a_release_is_recorded_with_its_expiry_then_never_again() -> None:
    later = T0 + timedelta(hours=1)
    [event] = decide(ReleasePack(release=released(), retention=timedelta(hours=720)),
                     ReplayState(), later)
    assert isinstance(event, ContextPackReleased)
    assert event.at == later and event.expires_at == later + timedelta(hours=720)
    state = evolve(ReplayState(), event)
    again = decide(ReleasePack(release=released(), retention=timedelta(seconds=1)), state,
                   later + timedelta(days=1))
    assert again == [] and state.release is not None
    assert state.release.expires_at == later + timedelta(hours=720)  # the recorded expiry


def test_a_replay_run_needs_a_recorded_release_that_has_not_expired() -> None:
    with pytest.raises(ReplayNotFoundError, match=r"^replay not found$"):
        decide(RecordReplay(run=run()), ReplayState(), T0)
    state = fold(decide(ReleasePack(release=released(), retention=timedelta(seconds=90)),
                        ReplayState(), T0))
    [event] = decide(RecordReplay(run=run()), state, T0 + timedelta(seconds=89))
    assert isinstance(event, ContextPackReplayed) and event.at == T0 + timedelta(seconds=89)
    assert evolve(state, event).runs == 1
    with pytest.raises(ReplayExpiredError) as expired:
        decide(RecordReplay(run=run()), state, T0 + timedelta(seconds=90))
    assert expired.value.message == f"replay rp_{'a' * 32} expired at 2025-06-12T10:17:00Z"


def test_pack_events_are_registered_under_their_stable_names() -> None:
    assert EVENTS["ContextPackReleased"] is ContextPackReleased
    assert EVENTS["ContextPackReplayed"] is ContextPackReplayed


def test_a_released_event_holds_no_text_field() -> None:
    fields = set(ContextPackReleased.__struct_fields__) | set(ReleasedItem.__struct_fields__)
    assert not fields & {"task", "text", "question", "answer"}


def _context(name: str, type_: str = "knowledge", live: bool = True,
             grants: tuple[tuple[Subject, tuple[str, ...]], ...] = ()) -> ContextState:
    return ContextState(live=live, name=name, type=type_,
                        grants=tuple(Grant(s, p, T0) for s, p in grants))


def test_readable_needs_a_live_memory_or_knowledge_context_with_read() -> None:
    contexts = [
        _context("facts", grants=((ALICE, ("read",)),)),
        _context("notes", "memory", grants=((ALICE, ("read", "write")),)),
        _context("writeonly", grants=((ALICE, ("write",)),)),
        _context("other", grants=((Subject("user", "bob"), ("read",)),)),
        _context("scratch", "scratch", grants=((ALICE, ("read",)),)),
        _context("gone", live=False, grants=((ALICE, ("read",)),)),
    ]
    readable = readable_collections(ALICE, contexts, "", None)
    assert [c.name for c in contexts if c.name in readable] == ["facts", "notes"]
    admin = readable_collections(ADMIN, contexts, "", None)
    assert all(c.name in admin for c in contexts) and "deleted-since" in admin


def test_a_bound_credential_reads_only_its_sets_collections_even_archived() -> None:
    contexts = [_context(n, grants=((ALICE, ("read",)),)) for n in ("a", "b", "c")]
    bound = ContextSetState(exists=True, id="fin", version=2, collections=("a", "c", "z"))
    names = ("a", "b", "c", "z")
    assert [n for n in names if n in readable_collections(ALICE, contexts, "fin", bound)] \
        == ["a", "c"]
    archived = ContextSetState(exists=True, archived=True, id="fin", collections=("b",))
    assert [n for n in names if n in readable_collections(ALICE, contexts, "fin", archived)] \
        == ["b"]
    assert not any(n in readable_collections(ALICE, contexts, "fin", None) for n in names)
    assert [n for n in names if n in readable_collections(ADMIN, contexts, "fin", bound)] \
        == ["a", "c", "z"]


def test_the_active_set_of_a_pack_request() -> None:
    sets = {"fin": ContextSetState(exists=True, id="fin"),
            "old": ContextSetState(exists=True, archived=True, id="old")}
    get = sets.get
    assert active_set("", None, get) is None
    assert active_set("", "fin", get) is sets["fin"]
    assert active_set("fin", None, get) is sets["fin"]
    assert active_set("old", None, get) is None  # archived bound set: built as without one
    for bound, named in (("", "old"), ("", "nope"), ("old", "old")):
        with pytest.raises(ContextSetNotFoundError):
            active_set(bound, named, get)
    with pytest.raises(BoundToOtherSetError) as refused:
        active_set("fin", "other", get)
    assert refused.value.message == 'agent credential is bound to context set "fin"'


@pytest.mark.parametrize(("raw", "seconds"), [("", 720 * 3600), ("90s", 90), ("1h30m", 5400),
                                              ("720h", 720 * 3600)])
def test_replay_retention_setting(raw: str, seconds: float) -> None:
    env = {"CS_REPLAY_RETENTION": raw} if raw else {}
    assert Settings.from_env(env).replay_retention_seconds == seconds


@pytest.mark.parametrize("raw", ["0", "-5s", "30", "soon", "0s"])
def test_replay_retention_must_be_positive(raw: str) -> None:
    with pytest.raises(SettingsError, match=r"^CS_REPLAY_RETENTION must be a positive duration$"):
        Settings.from_env({"CS_REPLAY_RETENTION": raw})

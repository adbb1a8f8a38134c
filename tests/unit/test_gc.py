"""The pure GC decision (spec 6.6): each keep rule on its own, and a Hypothesis property over
random snapshot sets and policies: a kept snapshot satisfies at least one keep rule, a deleted one
satisfies none. The rules are restated here independently of the implementation."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from context_service.domain.context import gc
from context_service.domain.context.events import CloneSource

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
REV_A, REV_B = "a" * 64, "b" * 64


@dataclass(frozen=True)
class Snap:
    name: str
    created_at: datetime
    protected: bool = False
    revision: str = ""


def ago(**delta: float) -> datetime:
    return NOW - timedelta(**delta)


def names(items: tuple[Snap, ...]) -> list[str]:
    return [s.name for s in items]


SNAPS = [Snap("s1", ago(days=4)), Snap("s2", ago(days=3)), Snap("s3", ago(days=2)),
         Snap("s4", ago(days=1))]


def test_without_a_policy_everything_is_kept_oldest_first() -> None:
    result = gc.plan(list(reversed(SNAPS)), 0, None, (), NOW)
    assert names(result.kept) == ["s1", "s2", "s3", "s4"]
    assert result.deleted == ()
    assert gc.plan(SNAPS, 0, 0, (), NOW).deleted == ()  # a zero age is no rule


def test_keep_last_keeps_the_newest() -> None:
    result = gc.plan(SNAPS, 2, None, (), NOW)
    assert (names(result.kept), names(result.deleted)) == (["s3", "s4"], ["s1", "s2"])
    assert names(gc.plan(SNAPS, 9, None, (), NOW).kept) == ["s1", "s2", "s3", "s4"]


def test_ties_on_creation_time_are_ordered_by_name() -> None:
    same = [Snap("b", ago(hours=1)), Snap("a", ago(hours=1)), Snap("c", ago(hours=1))]
    result = gc.plan(same, 1, None, (), NOW)
    assert (names(result.kept), names(result.deleted)) == (["c"], ["a", "b"])


def test_max_age_keeps_snapshots_not_older_than_the_cutoff() -> None:
    day = 24 * 3600 * 10**9
    result = gc.plan(SNAPS, 0, 2 * day, (), NOW)
    assert (names(result.kept), names(result.deleted)) == (["s3", "s4"], ["s1", "s2"])


def test_max_age_is_exact_to_the_nanosecond() -> None:
    edge = [Snap("edge", ago(microseconds=5))]
    assert names(gc.plan(edge, 0, 5000, (), NOW).kept) == ["edge"]  # createdAt == cutoff
    assert names(gc.plan(edge, 0, 4999, (), NOW).deleted) == ["edge"]
    assert names(gc.plan([Snap("future", NOW + timedelta(seconds=1))], 0, 1, (), NOW).kept) == [
        "future"]


def test_protected_snapshots_are_always_kept() -> None:
    snaps = [Snap("old", ago(days=30), protected=True), Snap("new", ago(days=1))]
    result = gc.plan(snaps, 1, None, (), NOW)
    assert (names(result.kept), names(result.deleted)) == (["old", "new"], [])


def test_snapshots_referenced_by_a_clone_are_kept() -> None:
    snaps = [Snap("by-name", ago(days=9)), Snap("by-rev", ago(days=8), revision=REV_A),
             Snap("other", ago(days=7), revision=REV_B), Snap("newest", ago(days=1))]
    clones = [CloneSource("ctx", "by-name", ""), CloneSource("ctx", "gone", REV_A)]
    result = gc.plan(snaps, 1, None, clones, NOW)
    assert names(result.kept) == ["by-name", "by-rev", "newest"]
    assert names(result.deleted) == ["other"]


def test_an_empty_revision_is_never_a_reference() -> None:
    snaps = [Snap("no-rev", ago(days=2)), Snap("newest", ago(days=1))]
    result = gc.plan(snaps, 1, None, [CloneSource("ctx", "elsewhere", "")], NOW)
    assert names(result.deleted) == ["no-rev"]


# --- the property -----------------------------------------------------------------------------

snapshot_sets = st.lists(
    st.builds(Snap, name=st.text("abc-", min_size=1, max_size=4),
              created_at=st.integers(-10**6, 10**11).map(lambda ms: NOW - timedelta(
                  microseconds=ms)),
              protected=st.booleans(), revision=st.sampled_from(("", REV_A, REV_B))),
    max_size=12, unique_by=lambda s: s.name)
clone_sets = st.lists(st.builds(CloneSource, st.just("ctx"), st.text("abc-", max_size=4),
                                st.sampled_from(("", REV_A, REV_B))), max_size=3)
keep_lasts = st.integers(0, 15)
max_ages = st.one_of(st.none(), st.just(0), st.integers(1, 2 * 10**14))


def rules(snap: Snap, every: list[Snap], keep_last: int, max_age: int | None,
          clones: list[CloneSource]) -> dict[str, bool]:
    """The keep rules of spec 6.6, evaluated directly."""
    ranked = sorted(every, key=lambda s: (s.created_at, s.name), reverse=True)
    age_ns = (NOW - snap.created_at) // timedelta(microseconds=1) * 1000
    return {
        "protected": snap.protected,
        "newest": snap in ranked[:keep_last],
        "young": bool(max_age) and age_ns <= (max_age or 0),
        "referenced": any(c.snapshot == snap.name or (snap.revision and c.revision ==
                                                      snap.revision) for c in clones),
    }


@given(snapshot_sets, keep_lasts, max_ages, clone_sets)
def test_kept_snapshots_satisfy_a_keep_rule_and_deleted_ones_none(
        snaps: list[Snap], keep_last: int, max_age: int | None,
        clones: list[CloneSource]) -> None:
    result = gc.plan(snaps, keep_last, max_age, clones, NOW)
    no_policy = keep_last == 0 and not max_age
    for snap in result.kept:
        assert no_policy or any(rules(snap, snaps, keep_last, max_age, clones).values())
    for snap in result.deleted:
        assert not any(rules(snap, snaps, keep_last, max_age, clones).values())
    assert not (no_policy and result.deleted)


@given(snapshot_sets, keep_lasts, max_ages, clone_sets)
def test_the_plan_partitions_the_snapshots_oldest_first(
        snaps: list[Snap], keep_last: int, max_age: int | None,
        clones: list[CloneSource]) -> None:
    result = gc.plan(snaps, keep_last, max_age, clones, NOW)
    order = gc.oldest_first(snaps)
    assert sorted(result.kept + result.deleted, key=order.index) == order
    assert list(result.kept) == [s for s in order if s in result.kept]
    assert list(result.deleted) == [s for s in order if s in result.deleted]
    assert len(result.kept) >= min(keep_last, len(snaps))

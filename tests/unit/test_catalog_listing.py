"""The in-process catalog listing the agent routes' access checks read: answers from memory
while the local runner feeds it, forgets every listing when a batch holds a context event or
the runner re-reads its positions, never keeps a read that overlapped such a batch, and reads
the view when the runner is elsewhere."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime

from context_service.domain.context.state import ContextState
from context_service.domain.events import Event, Subject
from context_service.domain.stream import Recorded, StreamRef
from context_service.projections.context_catalog.listing import CatalogListing

AT = datetime(2026, 1, 1, tzinfo=UTC)


class Reads:
    """The catalog view: the listed states of each namespace, counting reads."""

    def __init__(self) -> None:
        self.rows: dict[str, list[ContextState]] = {"acme": [state("a")], "globex": []}
        self.calls = 0
        self.during_read: Callable[[], None] | None = None

    def list(self, namespace: str, subject: Subject | None) -> Sequence[ContextState]:
        assert subject is None
        self.calls += 1
        found = list(self.rows.get(namespace, []))
        if self.during_read is not None:  # a batch commits while this read is under way
            hook, self.during_read = self.during_read, None
            hook()
        return found

    def refused(self, namespace: str) -> frozenset[str]:
        return frozenset()


def state(name: str) -> ContextState:
    return ContextState(live=True, namespace="acme", name=name)


def batch(kind: str) -> list[Recorded]:
    return [Recorded(7, StreamRef(kind, "acme", "x"), 1, "E", Event(at=AT, actor="a"))]


def names(listed: Sequence[ContextState]) -> list[str]:
    return [s.name for s in listed]


def listing(reads: Reads, live: bool = True) -> CatalogListing:
    return CatalogListing(reads, live=lambda: live)


def test_a_listing_is_read_once_while_the_runner_feeds_it() -> None:
    reads = Reads()
    catalog = listing(reads)
    assert names(catalog.live_contexts("acme")) == ["a"]
    assert names(catalog.live_contexts("acme")) == ["a"]
    assert reads.calls == 1
    assert catalog.live_contexts("globex") == ()
    assert reads.calls == 2


def test_a_context_event_forgets_every_listing() -> None:
    reads = Reads()
    catalog = listing(reads)
    catalog.live_contexts("acme")
    catalog.live_contexts("globex")
    reads.rows["acme"].append(state("b"))
    catalog.applied(batch("context"))
    assert names(catalog.live_contexts("acme")) == ["a", "b"]
    assert catalog.live_contexts("globex") == ()
    assert reads.calls == 4


def test_events_of_other_streams_keep_the_listings() -> None:
    reads = Reads()
    catalog = listing(reads)
    catalog.live_contexts("acme")
    catalog.applied(batch("context_pack") + batch("agent_credentials"))
    catalog.live_contexts("acme")
    assert reads.calls == 1


def test_a_read_that_overlapped_a_batch_is_not_kept() -> None:
    reads = Reads()
    catalog = listing(reads)
    reads.during_read = lambda: catalog.applied(batch("context"))
    catalog.live_contexts("acme")  # may predate the batch: answered, not kept
    reads.rows["acme"] = []
    assert catalog.live_contexts("acme") == ()
    assert reads.calls == 2


def test_reset_forgets_everything() -> None:
    reads = Reads()
    catalog = listing(reads)
    catalog.live_contexts("acme")
    reads.rows["acme"] = []
    catalog.reset()
    assert catalog.live_contexts("acme") == ()


def test_without_the_local_runner_every_call_reads_the_view() -> None:
    reads = Reads()
    catalog = listing(reads, live=False)
    catalog.live_contexts("acme")
    catalog.live_contexts("acme")
    assert reads.calls == 2


def test_the_least_recently_used_namespace_goes_first() -> None:
    reads = Reads()
    catalog = CatalogListing(reads, live=lambda: True, size=1)
    catalog.live_contexts("acme")
    catalog.live_contexts("globex")  # acme out
    catalog.live_contexts("globex")
    catalog.live_contexts("acme")
    assert reads.calls == 3

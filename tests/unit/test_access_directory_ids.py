"""The access directory knows every credential id: an unknown id is answered without reading the
view, a credential created by any batch (even one committed while the ids were being listed) is
still found, a reset forgets the list, and past its capacity the directory reads the view."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable

from context_service.domain.agent_credentials.events import AgentCredentialRevoked
from context_service.projections.agent_access.directory import AccessDirectory
from tests.unit.test_access_directory import AT, Reads, created, recorded, view_row


def some_id() -> str:
    return uuid.uuid4().hex[:16]


class Listing:
    """The full id list of the view, counting its reads; ``during`` runs inside one read."""

    def __init__(self, reads: Reads) -> None:
        self.reads = reads
        self.calls = 0
        self.during: Callable[[], None] | None = None
        self.fail = False

    def __call__(self) -> Iterable[str]:
        self.calls += 1
        if self.fail:
            raise ConnectionError("the database is away")
        listed = list(self.reads.credentials)
        if self.during is not None:
            hook, self.during = self.during, None
            hook()
        return listed


def directory(reads: Reads, capacity: int = 1000) -> tuple[AccessDirectory, Listing]:
    listing = Listing(reads)
    return AccessDirectory(reads, live=lambda: True, ids=listing, id_capacity=capacity), listing


def test_unknown_ids_are_answered_from_memory_after_one_listing() -> None:
    reads = Reads()
    known = some_id()
    reads.credentials[known] = view_row(known)
    found, listing = directory(reads)
    for _ in range(300):
        assert found.credential(some_id()) is None
    assert (listing.calls, reads.calls) == (1, 0)
    assert found.credential(known) == view_row(known)  # known: read once, then held
    assert found.credential(known) == view_row(known)
    assert reads.calls == 1


def test_a_credential_created_after_the_listing_is_found() -> None:
    reads = Reads()
    found, _ = directory(reads)
    assert found.credential(some_id()) is None
    fresh = some_id()
    reads.credentials[fresh] = view_row(fresh)
    found.applied([recorded(created(fresh))])
    assert found.credential(fresh) is not None


def test_a_credential_committed_while_the_ids_are_listed_is_found() -> None:
    reads = Reads()
    found, listing = directory(reads)
    fresh = some_id()

    def creation_commits() -> None:  # after the listing's snapshot, before it returns
        reads.credentials[fresh] = view_row(fresh)
        found.applied([recorded(created(fresh))])

    listing.during = creation_commits
    assert found.credential(some_id()) is None
    found._credentials.clear()  # only the id list can tell now
    assert found.credential(fresh) == view_row(fresh)


def test_a_reset_during_the_listing_discards_it_and_the_next_miss_lists_again() -> None:
    reads = Reads()
    found, listing = directory(reads)
    other = some_id()

    def another_instance_moved_the_views() -> None:
        reads.credentials[other] = view_row(other)
        found.reset()

    listing.during = another_instance_moved_the_views
    found.credential(some_id())
    assert found.credential(other) == view_row(other)
    assert listing.calls == 2
    found.reset()
    assert found.credential(some_id()) is None and listing.calls == 3


def test_revocations_and_unlisted_ids_keep_the_known_set_exact() -> None:
    reads = Reads()
    cid = some_id()
    reads.credentials[cid] = view_row(cid)
    found, _ = directory(reads)
    found.credential(some_id())
    found.applied([recorded(AgentCredentialRevoked(at=AT, actor="user:bob", credential_id=cid))])
    reads.credentials[cid] = view_row(cid, revoked=True)
    revoked = found.credential(cid)
    assert revoked is not None and revoked.revoked_at == AT


def test_past_its_capacity_the_directory_reads_the_view_again() -> None:
    reads = Reads()
    for _ in range(5):
        cid = some_id()
        reads.credentials[cid] = view_row(cid)
    found, listing = directory(reads, capacity=4)
    for _ in range(3):
        assert found.credential(some_id()) is None
    assert (listing.calls, reads.calls) == (1, 3)  # listed once, never trusted
    gauges = {name: value for name, _, _, value in found.gauges()}
    assert gauges["cs_access_directory_ids_complete"] == 0
    assert gauges["cs_access_directory_credential_ids"] == 0


def test_batches_past_the_capacity_stop_the_shortcut() -> None:
    reads = Reads()
    found, _ = directory(reads, capacity=3)
    assert found.credential(some_id()) is None and reads.calls == 0
    found.applied([recorded(created(some_id()), position=i) for i in range(4)])
    found.credential(some_id())
    assert reads.calls == 1


def test_a_failed_listing_falls_back_to_the_view_and_is_tried_again() -> None:
    reads = Reads()
    found, listing = directory(reads)
    listing.fail = True
    assert found.credential(some_id()) is None and reads.calls == 1
    listing.fail = False
    assert found.credential(some_id()) is None
    assert (listing.calls, reads.calls) == (2, 1)
    assert {n: v for n, _, _, v in found.gauges()}["cs_access_directory_ids_complete"] == 1

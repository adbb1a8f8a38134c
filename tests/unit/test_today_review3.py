"""Review of the day's changes, pure parts: which collections a pack back at P reads (rule 5
for the generation that lived then, for every credential), the admission view of a name
created, deleted and taken again under any split into batches, and the Kubernetes client's pool
against the callers that hold its connections at once, in one process running every worker."""

from __future__ import annotations

import inspect

import pytest

from context_service.adapters.kubernetes import client
from context_service.adapters.kubernetes.cluster import KubernetesCluster
from context_service.adapters.kubernetes.reconciler import Reconciler
from context_service.adapters.kubernetes.rest import REQUEST_SLOTS
from context_service.adapters.kubernetes.watch import ClusterWatch
from context_service.domain.context.events import ContextDeleted
from context_service.domain.context_pack.readable import Readable, named_readable
from context_service.domain.workspace.admission import Origin
from context_service.projections.collection_admission.projection import CollectionAdmission
from tests.unit.test_collection_admission import ALICE, AT, MALLORY, Log, MemoryView


def test_a_members_name_at_p_is_read_only_when_the_generation_then_is_admitted() -> None:
    """``notes`` is readable now (a member's collection); at P the name held a non-member's
    collection, since deleted: read by its name, its text reached the member's packs back
    there. ``ledger`` is read now and was admitted then; ``later`` was not a collection at P
    (the pack reports it unavailable, it is not refused)."""
    readable = named_readable(Readable(frozenset({"notes", "ledger", "later"})),
                              lambda name: name in {"notes", "ledger"}, frozenset({"ledger"}))
    assert [readable(n) for n in ("notes", "ledger", "later", "other")] == [
        False, True, True, False]


def test_the_administrators_names_at_p_are_judged_as_before() -> None:
    readable = named_readable(Readable(None, live=frozenset({"ledger", "later"})),
                              lambda name: name in {"notes", "ledger", "gone"},
                              frozenset({"ledger", "gone"}))
    assert [readable(n) for n in ("notes", "ledger", "later", "gone", "other")] == [
        False, True, True, True, False]


def test_the_pool_holds_every_caller_of_a_process_that_runs_every_worker(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The request calls, both reconcilers' watches (the context reconciler's and the snapshot
    reconciler's: one open request per resource each), the reconciler's parallel passes and the
    three loops that call the API by themselves (the reconciler's, the snapshot reconciler's,
    the query mirror's). The pool counted one watch: a busy process went past it, and each call
    beyond closed its connection and logged a warning."""
    monkeypatch.setattr(ClusterWatch, "start", lambda self: self)
    watched = len(KubernetesCluster(rest=None).watch(None, lambda change: None)  # type: ignore[arg-type]
                  .resources)
    parallel = inspect.signature(Reconciler).parameters["parallel"].default
    loops = 3
    assert REQUEST_SLOTS + 2 * watched + parallel + loops <= client.POOL_CONNECTIONS


def test_a_name_created_deleted_and_taken_again_gives_one_view_whatever_the_batches() -> None:
    log = Log()
    log.member(ALICE, "member")
    log.create("notes", ALICE)
    log.add("context", "notes", ContextDeleted(at=AT, actor=ALICE.key, force=False))
    again = log.create("notes", MALLORY)  # no role in acme
    gone = log.add("context", "notes", ContextDeleted(at=AT, actor="user:mallory", force=False))
    for first in range(len(log.records) + 1):
        for second in range(first, len(log.records) + 1):
            view = MemoryView()
            for batch in (log.records[:first], log.records[first:second],
                          log.records[second:]):
                CollectionAdmission().apply(view, batch)
            assert view.stored == {("acme", "notes"): Origin(again, False, gone)}

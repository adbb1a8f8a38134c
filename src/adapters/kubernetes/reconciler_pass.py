"""One reconciliation pass over a scope (some or all recorded items of one namespace).

Observe the scope's objects with a few list calls, plan, carry out the plan stage by stage
(actions of a stage in parallel), then record the observations whose recorded value differs.
Reads only when nothing differs: a resync of a converged cluster writes nothing anywhere.

What a pass cannot repair (a PVC another owner holds, a PVC whose immutable spec differs, a
restore the server refuses) is a conflict: logged when first seen and counted, never retried
with backoff, since retrying cannot change the answer.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from concurrent.futures import Executor
from dataclasses import dataclass, field
from datetime import datetime
from typing import TypeVar

from context_service.adapters.eventstore.application import ContextApplication, PoolApplication
from context_service.domain.cluster import (
    ClaimInfo,
    Cluster,
    ClusterError,
    PodConsumer,
    PoolObject,
    PoolObjects,
    context_claim_name,
)
from context_service.domain.context.commands import Command
from context_service.domain.context.decide import decide as context_decide
from context_service.domain.errors import DomainError
from context_service.domain.pool.decide import decide as pool_decide
from context_service.domain.pool.state import PoolState
from context_service.domain.reconcile import actions as steps
from context_service.domain.reconcile.desired import pool_objects
from context_service.domain.reconcile.observe import observe_claim, observe_consumers, observe_pool
from context_service.domain.reconcile.plan import (
    Observed,
    Scope,
    by_pool,
    conflicts,
    own_claim,
    plan,
)

log = logging.getLogger(__name__)
T = TypeVar("T")


@dataclass
class PassResult:
    planned: int = 0  # actions planned
    changed: int = 0  # actions that changed the cluster
    recorded: int = 0  # observation commands that appended events
    errors: list[str] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)  # left alone for an operator to resolve


def observe(cluster: Cluster, scope: Scope, executor: Executor | None = None) -> Observed:
    """Read what the scope needs: one pool's objects or all pools' (4 lists), existing claims,
    one context claim or all managed ones (plus a direct read for each live context whose claim
    is not among them), and the Pods mounting each live context's claim."""
    ns, pools, contexts = scope.namespace, scope.pools, scope.contexts
    objects = _pool_objects(cluster, ns, pools)
    names = sorted({p.workspace.claim_name for p in pools
                    if p.live and p.strategy == "existing-claim"})
    reads = _map(executor, functools.partial(cluster.get_claim, ns), names)
    existing = {c.name: c for c in reads if c is not None}
    reads = _map(executor, functools.partial(cluster.get_claim, ns),
                 _unlisted(ns, pools, objects))
    named = {c.name: c for c in reads if c is not None}
    claims: dict[str, ClaimInfo] = {}
    if len(contexts) > 1:
        claims = {c.name: c for c in cluster.list_context_claims(ns)}
    for context in contexts:  # a claim missing from the managed list may exist unlabelled
        name = context_claim_name(context.name)
        if name not in claims and (context.live or len(contexts) == 1):
            found = cluster.get_claim(ns, name)
            if found is not None:
                claims[name] = found
    live = [c.name for c in contexts if c.live]
    pods = _map(executor, lambda name: tuple(cluster.list_claim_consumers(
        ns, context_claim_name(name))), live)
    return Observed(pool_objects=objects, existing_claims=existing, context_claims=claims,
                    consumers=dict(zip(live, pods, strict=True)), named_claims=named,
                    drift=objects.drift)


def _pool_objects(cluster: Cluster, ns: str, pools: tuple[PoolState, ...]) -> PoolObjects:
    """One pool's objects or all pools' (4 lists), with the drift of what the live pools want:
    the cluster compares the fields the service sets with the objects it lists anyway."""
    if not pools:
        return PoolObjects()
    only = pools[0].name if len(pools) == 1 else None
    wanted: list[PoolObject] = []
    for pool in pools:
        if pool.live:
            objects = pool_objects(pool, ns)
            wanted += objects.claims.values()
            if not pool.adopted:  # spec 6.10: its Sandboxes and SandboxClaims are left as found
                wanted += [*objects.sandboxes.values(), *objects.sandbox_claims.values()]
    return cluster.list_pool_objects(ns, only, wanted)


def _unlisted(ns: str, pools: tuple[PoolState, ...], objects: PoolObjects) -> list[str]:
    """PVC names live pools want that their labelled lists lack: a PVC there may have lost its
    labels (relabelled) or belong to another owner (refused); usually none is missing."""
    grouped = by_pool(objects)
    missing: set[str] = set()
    for pool in pools:
        if pool.live:
            listed = {c.name for c in grouped.get(pool.name, PoolObjects()).claims}
            missing |= set(pool_objects(pool, ns).claims) - listed
    return sorted(missing)


def _map(executor: Executor | None, read: Callable[[str], T], names: list[str]) -> list[T]:
    """Independent reads, in parallel when there are several."""
    if executor is None or len(names) < 2:
        return [read(n) for n in names]
    return list(executor.map(read, names))


@dataclass(frozen=True)
class Refused:
    """A restore the server refuses (an immutable field): the same request would be refused
    again, so it is a conflict to report rather than an error to retry."""

    message: str


class NamespacePass:
    """Runs passes; shared by the worker loop, tests and benchmarks."""

    def __init__(self, cluster: Cluster, contexts: ContextApplication, pools: PoolApplication,
                 executor: Executor | None, clock: Callable[[], datetime]) -> None:
        self.cluster = cluster
        self.contexts = contexts
        self.pools = pools
        self.executor = executor
        self.clock = clock
        # each namespace's conflicts found by its last pass (warned of once while they last):
        # only the current ones are held, or a long-running reconciler would keep every
        # conflict it ever met; ``reported`` counts the warnings
        self._current: dict[str, set[str]] = {}
        self.reported = 0

    def run(self, scope: Scope) -> PassResult:
        result = PassResult()
        try:
            observed = observe(self.cluster, scope, self.executor)
        except ClusterError as exc:
            result.errors.append(f"observe {scope.namespace}: {exc}")
            return result
        for (kind, name), paths in sorted(observed.drift.items()):
            log.info("drift on %s %s/%s: %s", kind, scope.namespace, name, ", ".join(paths))
        actions = plan(scope, observed)
        result.planned = len(actions)
        result.conflicts += conflicts(scope, observed)
        self._carry_out(actions, result)
        self._record(scope, observed, result)
        self._report(scope, result.conflicts)
        return result

    def held(self) -> int:
        """The conflicts the last passes of the namespaces found."""
        return sum(len(found) for found in self._current.values())

    def _report(self, scope: Scope, found: list[str]) -> None:
        """Warn once per conflict while it lasts (a resync finds it again every time until it is
        resolved); one resolved and met again is warned of again. A pass over some of the
        namespace's pools cannot find the others' conflicts: only a pass over the whole
        namespace (each resync) forgets those it no longer finds."""
        before = self._current.get(scope.namespace, set())
        for conflict in sorted(set(found) - before):
            self.reported += 1
            log.warning("reconcile conflict: %s", conflict)
        current = set(found) if scope.whole else before | set(found)
        if current:
            self._current[scope.namespace] = current
        else:
            self._current.pop(scope.namespace, None)

    def create_new(self, scope: Scope) -> PassResult:
        """Pools just requested: create their objects without looking first (every create is
        create-if-absent, so a leftover is taken as it is, never duplicated). Nothing is
        recorded; the regular pass that follows observes."""
        result = PassResult()
        actions = plan(scope, Observed())
        result.planned = len(actions)
        self._carry_out(actions, result)
        return result

    def _carry_out(self, actions: list[steps.Action], result: PassResult) -> None:
        waiting: set[str] = set()  # pools whose later stages depend on a failed action
        for stage in steps.STAGES:
            batch = [a for a in actions if a.stage == stage and steps.owner(a) not in waiting]
            if self.executor is not None and len(batch) > 1:
                outcomes = list(self.executor.map(self._apply, batch))
            else:
                outcomes = [self._apply(a) for a in batch]
            for action, outcome in zip(batch, outcomes, strict=True):
                if isinstance(outcome, Refused):
                    result.conflicts.append(outcome.message)
                elif isinstance(outcome, str):
                    result.errors.append(outcome)
                    if steps.owner(action):  # its pool's next stage waits (PVCs before
                        waiting.add(steps.owner(action))  # Sandboxes); nothing else does
                elif outcome:
                    result.changed += 1

    def _apply(self, action: steps.Action) -> bool | str | Refused:
        try:
            changed = steps.apply(self.cluster, action)
        except ClusterError as exc:
            if isinstance(action, steps.RESTORES) and exc.status in (400, 422):
                return Refused(f"{steps.describe(action)} refused: {exc}")
            return f"{steps.describe(action)}: {exc}"
        except Exception as exc:  # a defect in one action fails that action, not the pass
            log.exception("reconcile action failed: %s", steps.describe(action))
            return f"{steps.describe(action)}: {type(exc).__name__}"
        if changed:
            log.info("reconciled: %s", steps.describe(action))
        return changed

    def _record(self, scope: Scope, observed: Observed, result: PassResult) -> None:
        now = self.clock()
        try:
            result.recorded += self._record_pools(scope, observed, now)
            result.recorded += self._record_contexts(scope, observed, now)
        except DomainError as exc:  # a concurrent change; the next pass records afresh
            result.errors.append(f"record {scope.namespace}: {exc.message}")

    def _record_pools(self, scope: Scope, observed: Observed, now: datetime) -> int:
        recorded = 0
        grouped = by_pool(observed.pool_objects)
        for pool in scope.pools:
            if not pool.live:
                continue
            existing = observed.existing_claims.get(pool.workspace.claim_name)
            command = observe_pool(pool, grouped.get(pool.name, PoolObjects()), existing)
            if pool_decide(command, pool, now) and self.pools.execute(command).position:
                recorded += 1
        return recorded

    def _record_contexts(self, scope: Scope, observed: Observed, now: datetime) -> int:
        recorded = 0
        for context in scope.contexts:
            if not context.live:
                continue
            found = observed.context_claims.get(context_claim_name(context.name))
            claim = own_claim(context, found)  # another owner's claim is not the context's
            consumers: tuple[PodConsumer, ...] = ()
            if claim is not None or found is None:
                consumers = observed.consumers.get(context.name, ())
            commands: tuple[Command, ...] = (observe_claim(claim), observe_consumers(consumers))
            for command in commands:
                if context_decide(command, context, now) and self.contexts.execute(
                        context.namespace, context.name, command).position:
                    recorded += 1
        return recorded

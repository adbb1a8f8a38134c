"""Which recorded items to reconcile next: the dirty set with per-item backoff, the mapping of
watch notices onto items, and the grouping of due items into per-namespace scopes.

Keys: ``("pool", name)``, ``("context", namespace, name)`` and ``("ns", namespace)`` (every item
of the namespace). A notice names an object; deterministic object names (spec 6.3, 6.7) lead
back to the pool or context, and a Pod change also refreshes the consumers of the namespace's
contexts.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator, Sequence

from context_service.adapters.kubernetes.reconciler_desired import Key, LogDesired
from context_service.domain.cluster import Change
from context_service.domain.reconcile.plan import Scope

_INDEXED = re.compile(r"^(?:sandbox|claim)-(.+)-\d+$")
_WORKSPACE = re.compile(r"^(.+)-workspace(?:-\d+)?$")


class DirtySet:
    """Items due for a pass at a monotonic time. A failed pass backs its namespace off
    exponentially (the retry is a pass over the whole namespace); notices and log changes still
    cut a backoff short (something changed), the periodic resync does not."""

    def __init__(self, base: float = 0.5, cap: float = 30.0) -> None:
        self.base = base
        self.cap = cap
        self.due: dict[Key, float] = {}
        self.failures: dict[str, int] = {}  # consecutive failed passes, by namespace

    def mark(self, key: Key, at: float) -> None:
        self.due[key] = min(self.due.get(key, math.inf), at)

    def mark_all(self, namespaces: Iterable[str], at: float) -> None:
        for namespace in namespaces:
            self.mark(("ns", namespace), at)

    def resync(self, namespaces: Iterable[str], at: float) -> None:
        self.mark_all((n for n in namespaces if n not in self.failures), at)

    def take_due(self, now: float) -> list[Key]:
        taken = [k for k, at in self.due.items() if at <= now]
        for key in taken:
            del self.due[key]
        return taken

    def retry(self, namespace: str, keys: Iterable[Key], now: float) -> float:
        """Schedule a failed pass again; answers the delay. The retry covers the whole
        namespace: while it backs off the periodic resync skips it, so a retry of the failed
        keys alone would leave drift elsewhere in it uncorrected for as long as one item fails."""
        count = self.failures.get(namespace, 0) + 1
        self.failures[namespace] = count
        delay: float = min(self.cap, self.base * 2.0 ** (count - 1))
        for key in (*keys, ("ns", namespace)):
            self.due[key] = min(self.due.get(key, math.inf), now + delay)
        return delay

    def succeeded(self, namespace: str) -> None:
        self.failures.pop(namespace, None)

    def next_due(self) -> float:
        return min(self.due.values(), default=math.inf)


def pool_namespace(desired: LogDesired, name: str, default: str) -> str:
    return desired.pools[name].namespace or default


def keys_for_change(change: Change, desired: LogDesired, default: str) -> set[Key]:
    """The items a watch notice may concern (none when it concerns nothing recorded)."""
    ns, name = change.namespace, change.name
    if not name:  # a relist: anything may have changed
        targets = {ns} if ns else desired.namespaces(default)
        return {("ns", n) for n in targets}
    keys: set[Key] = set()
    pools = [m.group(1) for m in (_INDEXED.match(name), _WORKSPACE.match(name)) if m]
    if change.kind == "persistentvolumeclaims":
        if name.startswith("context-") and (ns, name[8:]) in desired.contexts:
            keys.add(("context", ns, name[8:]))
        pools += [p.name for p in desired.pools.values() if p.workspace.claim_name == name]
    for pool in pools:
        if pool in desired.pools and pool_namespace(desired, pool, default) == ns:
            keys.add(("pool", pool))
    if change.kind == "pods":
        keys |= {("context", n, c) for (n, c), s in desired.contexts.items() if n == ns and s.live}
    return keys


def scopes_for(keys: Sequence[Key], desired: LogDesired,
               default: str) -> Iterator[tuple[list[Key], Scope]]:
    """Group due keys by namespace into scopes (a whole namespace when ``("ns", n)`` is due)."""
    by_ns: dict[str, list[Key]] = {}
    for key in keys:
        if key[0] == "pool":
            if key[1] not in desired.pools:
                continue
            namespace = pool_namespace(desired, key[1], default)
        else:
            namespace = key[1]
        by_ns.setdefault(namespace, []).append(key)
    for namespace, grouped in sorted(by_ns.items()):
        wanted = set(grouped)
        whole = ("ns", namespace) in wanted
        pools = tuple(p for n, p in sorted(desired.pools.items())
                      if (p.namespace or default) == namespace
                      and (whole or ("pool", n) in wanted))
        contexts = tuple(c for (n, name), c in sorted(desired.contexts.items())
                         if n == namespace and (whole or ("context", n, name) in wanted))
        if pools or contexts:
            yield grouped, Scope(namespace=namespace, pools=pools, contexts=contexts,
                                 whole=whole)

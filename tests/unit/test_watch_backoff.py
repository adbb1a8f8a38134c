"""The watch threads' wait between failed attempts: a starting API server (503) is asked again
after a wait that doubles up to 30 s, not every second; a success starts again from the first
wait. (The client no longer sleeps a 503's Retry-After inside a call, so this is the only
throttle a watch has.)"""

from __future__ import annotations

import threading
from typing import Any

from context_service.adapters.kubernetes.rest import PVCS
from context_service.adapters.kubernetes.watch import ClusterWatch
from context_service.domain.cluster import ClusterError


class Waits(threading.Event):
    """The watch's stop event: records each wait asked of it, and stops after ``until``."""

    def __init__(self, until: int) -> None:
        super().__init__()
        self.asked: list[float | None] = []
        self.until = until

    def wait(self, timeout: float | None = None) -> bool:
        self.asked.append(timeout)
        if len(self.asked) >= self.until:
            self.set()
        return self.is_set()


class Stream:
    """A watch stream that ends at once (as at the server's watch timeout)."""

    def __iter__(self) -> Any:
        return iter(())

    def close(self) -> None:
        pass


class Cluster:
    """The REST port of a cluster whose lists and watches answer as told, in turn (then busy)."""

    def __init__(self, lists: list[str] | None = None, watches: list[str] | None = None) -> None:
        self.lists, self.watches = list(lists or []), list(watches or [])

    def get(self, path: str, params: Any = None) -> dict[str, Any]:
        if (self.lists.pop(0) if self.lists else "busy") == "busy":
            raise ClusterError(503, "ServiceUnavailable", "the server is starting")
        return {"metadata": {"resourceVersion": "7"}}

    def watch(self, path: str, version: str) -> Stream:
        if (self.watches.pop(0) if self.watches else "busy") == "busy":
            raise ClusterError(503, "ServiceUnavailable", "the server is starting")
        return Stream()  # a watch that ran and ended (the server's timeout)


def run(cluster: Cluster, waits: int) -> list[float | None]:
    watch = ClusterWatch(cluster, [PVCS], "ns", lambda change: None,  # type: ignore[arg-type]
                         retry_seconds=1.0)
    stop = Waits(waits)
    watch._stop = stop
    watch._run(PVCS)  # in this thread: it ends once the waits are spent
    return stop.asked


def test_a_busy_api_server_is_asked_again_after_a_doubling_wait() -> None:
    assert run(Cluster([]), 8) == [1.0, 2.0, 4.0, 8.0, 16.0, 30.0, 30.0, 30.0]


def test_a_watch_that_ran_starts_again_from_the_first_wait() -> None:
    # busy, busy, then a list and a watch that ran; the next watch fails: the first wait again
    assert run(Cluster(["busy", "busy", "ok"], ["ok"]), 4) == [1.0, 2.0, 1.0, 2.0]


def test_a_list_that_answers_while_every_watch_fails_keeps_doubling() -> None:
    assert run(Cluster(["ok"] * 5), 5) == [1.0, 2.0, 4.0, 8.0, 16.0]

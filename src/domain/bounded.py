"""A map bounded by the bytes its values are estimated to take, for in-process caches keyed by
what callers send: least recently used out first, an entry larger than the whole bound never
kept, entries dropped on demand (``forget``, ``retain``), and what it holds reported as gauges
(``cs_cache_entries``, ``cs_cache_bytes``, ``cs_cache_limit_bytes``, labelled by cache)."""

from __future__ import annotations

import sys
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable, Iterator
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

Gauge = tuple[str, str, dict[str, str], float]

MiB = 1 << 20


class BoundedCache(Generic[K, V]):
    """Least recently used first out once the entries' estimated bytes pass ``limit`` (or
    their number passes ``max_entries``). ``size`` estimates an entry's bytes once, when it is
    kept. Thread-safe; values are never copied, so a caller holding one keeps it alive after
    it is dropped here."""

    def __init__(self, name: str, limit: int, size: Callable[[K, V], int],
                 max_entries: int | None = None) -> None:
        self.name = name
        self.limit = limit
        self.max_entries = max_entries
        self._size = size
        self._lock = threading.Lock()
        self._entries: OrderedDict[K, tuple[V, int]] = OrderedDict()
        self._bytes = 0
        self.refused = 0  # entries too large for the whole bound, never kept

    def get(self, key: K) -> V | None:
        """The value of ``key`` (now the most recently used), or None."""
        with self._lock:
            found = self._entries.get(key)
            if found is None:
                return None
            self._entries.move_to_end(key)
            return found[0]

    def __contains__(self, key: object) -> bool:
        with self._lock:
            return key in self._entries

    def keep(self, key: K, value: V) -> V:
        """Hold ``value`` under ``key`` unless a value is held already (that one is returned:
        the first of two concurrent loads wins); an entry larger than the bound is returned
        without being held."""
        size = self._size(key, value)
        with self._lock:
            found = self._entries.get(key)
            if found is not None:
                self._entries.move_to_end(key)
                return found[0]
            if size > self.limit:
                self.refused += 1
                return value
            self._entries[key] = (value, size)
            self._bytes += size
            while self._bytes > self.limit or (self.max_entries is not None
                                               and len(self._entries) > self.max_entries):
                _, (_, dropped) = self._entries.popitem(last=False)
                self._bytes -= dropped
            return value

    def fits(self, size: int) -> bool:
        """Whether an entry of ``size`` bytes would be kept without evicting any other."""
        with self._lock:
            return self._bytes + size <= self.limit

    def forget(self, keys: Iterable[K]) -> int:
        """Drop the entries of ``keys``; how many were held."""
        dropped = 0
        with self._lock:
            for key in keys:
                found = self._entries.pop(key, None)
                if found is not None:
                    self._bytes -= found[1]
                    dropped += 1
        return dropped

    def retain(self, keep: Callable[[K, V], bool]) -> int:
        """Drop every entry for which ``keep`` is false; how many were dropped."""
        with self._lock:
            gone = [k for k, (v, _) in self._entries.items() if not keep(k, v)]
        return self.forget(gone)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._bytes = 0

    def keys(self) -> list[K]:
        with self._lock:
            return list(self._entries)

    def __iter__(self) -> Iterator[K]:
        """The keys held when called, least recently used first."""
        return iter(self.keys())

    def values(self) -> list[V]:
        """The values held, least recently used first (their use is not refreshed)."""
        with self._lock:
            return [v for v, _ in self._entries.values()]

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    @property
    def bytes(self) -> int:
        """The estimated bytes of the entries held."""
        with self._lock:
            return self._bytes

    def gauges(self) -> list[Gauge]:
        return cache_gauges(self.name, len(self), self.bytes, self.limit)


def cache_gauges(name: str, entries: int, size: int, limit: int) -> list[Gauge]:
    """The three gauges of one bounded in-process cache."""
    labels = {"cache": name}
    return [("cs_cache_entries", "Entries an in-process cache holds.", labels, entries),
            ("cs_cache_bytes", "Estimated bytes of the entries an in-process cache holds.",
             labels, size),
            ("cs_cache_limit_bytes", "The bound of an in-process cache, in estimated bytes.",
             labels, limit)]


def text_bytes(*texts: str) -> int:
    """What the strings take as Python objects (exact for ``str``, and O(1))."""
    return sum(sys.getsizeof(t) for t in texts)

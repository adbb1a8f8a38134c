"""A ``/v1`` query's type and revision filters are read once, not once per context.

The filters are lists of any length (up to the 1 MiB body) and a namespace may hold any number of
queryable contexts. Each context with a usable index was looked up in the lists, so the work was
the contexts times the lists: 100,000 types and 100,000 revisions (an 800 KB body) over 1,000
contexts took 1.3 s of CPU in the request thread. The test counts the entries read."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from context_service.adapters.postgres.views.query_index import _classify
from context_service.projections.query_index.reads import Search


class Counted(tuple[str, ...]):
    """A filter list that counts the entries any reader looks at (a ``in`` test, the worst
    case, looks at all of them)."""

    reads = 0

    def __iter__(self) -> Iterator[str]:
        for value in super().__iter__():
            Counted.reads += 1
            yield value

    def __contains__(self, value: object) -> bool:
        Counted.reads += len(self)
        return super().__contains__(value)


def rows(contexts: int, revision: str) -> list[dict[str, Any]]:
    return [{"rank": i + 1, "type": "knowledge", "index_revision": revision,
             "current_revision": revision, "max_weight": 1} for i in range(contexts)]


def test_the_filters_are_read_once_whatever_the_number_of_contexts() -> None:
    contexts, entries = 200, 5_000
    revision = "a" * 64
    types = Counted(["memory"] * entries + ["knowledge"])
    revisions = Counted(["b" * 64] * entries + [revision])
    search = Search(namespace="team", contexts=tuple(f"k{i}" for i in range(contexts)),
                    terms=(("alpha", 1),), types=types, revisions=revisions)
    Counted.reads = 0
    unavailable, usable = _classify(search, rows(contexts, revision))
    assert unavailable == () and len(usable) == contexts
    # each list once (a few times at most); per context, it was 200 times both lists
    assert Counted.reads <= 3 * (len(types) + len(revisions)), (
        f"{Counted.reads} entries read for {len(types) + len(revisions)} sent")


def test_the_filters_still_select_contexts() -> None:
    revision, other = "a" * 64, "c" * 64
    found = rows(3, revision)
    found[1]["type"] = "memory"
    found[2]["index_revision"] = found[2]["current_revision"] = other
    names = ("k0", "k1", "k2")

    def usable(types: tuple[str, ...], revisions: tuple[str, ...]) -> list[int]:
        search = Search(namespace="team", contexts=names, terms=(), types=types,
                        revisions=revisions)
        return [rank for rank, _ in _classify(search, found)[1]]

    assert usable((), ()) == [1, 2, 3]
    assert usable(("knowledge",), ()) == [1, 3]
    assert usable(("knowledge", "memory"), (other,)) == [3]
    assert usable(("memory",), (revision,)) == [2]
    assert usable(("graph",), ()) == []

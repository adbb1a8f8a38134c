"""Context-set scope of the library routes (spec 3.5, 9.1): bound versus unbound credentials,
archived and unknown sets all answering the same not-found."""

from __future__ import annotations

import pytest

from context_service.domain.context_set.state import ContextSetState
from context_service.domain.errors import ContextSetNotFoundError
from context_service.domain.library.scope import named_set, searched_sets, visible_sets

SETS = {
    "finance": ContextSetState(exists=True, id="finance", version=2),
    "hr": ContextSetState(exists=True, id="hr", version=1),
    "old": ContextSetState(exists=True, archived=True, id="old", version=3),
}


def get(set_id: str) -> ContextSetState | None:
    return SETS.get(set_id)


def listing() -> list[ContextSetState]:
    return [SETS[k] for k in sorted(SETS)]


def ids(sets: list[ContextSetState]) -> list[str]:
    return [s.id for s in sets]


@pytest.mark.parametrize(("bound", "requested"), [
    ("", "old"), ("", "absent"), ("finance", "hr"), ("finance", "old"), ("old", "old"),
    ("finance", "absent"), ("", "")])
def test_sets_not_visible_are_not_found(bound: str, requested: str) -> None:
    with pytest.raises(ContextSetNotFoundError, match=r"^context set not found$"):
        named_set(bound, requested, get)
    with pytest.raises(ContextSetNotFoundError):
        searched_sets(bound, requested, get, listing)


def test_named_sets() -> None:
    assert named_set("", "hr", get).id == "hr"
    assert named_set("finance", "finance", get).id == "finance"


def test_searched_sets_without_a_name() -> None:
    assert ids(searched_sets("", None, get, listing)) == ["finance", "hr"]
    assert ids(searched_sets("hr", None, get, listing)) == ["hr"]
    with pytest.raises(ContextSetNotFoundError):
        searched_sets("old", None, get, listing)


def test_visible_sets_of_list() -> None:
    assert ids(visible_sets("", get, listing)) == ["finance", "hr"]
    assert ids(visible_sets("finance", get, listing)) == ["finance"]
    assert visible_sets("old", get, listing) == []
    assert visible_sets("gone", get, listing) == []

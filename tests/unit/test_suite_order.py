"""The suite's own module order (tests/conftest.py): modules ordered by the costliest kind of test
each holds, each module's tests kept together and in their file order."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, cast

import pytest

from tests.conftest import by_module_cost


@dataclass
class Item:
    nodeid: str
    markers: set[str] = field(default_factory=set)

    def get_closest_marker(self, name: str) -> Any:
        return name if name in self.markers else None


def order(*items: Item) -> list[str]:
    return [item.nodeid for item in by_module_cost(cast(list[pytest.Item], list(items)))]


def test_a_module_runs_at_the_rank_of_its_costliest_test_and_stays_whole() -> None:
    assert order(
        Item("tests/unit/test_a.py::one"),
        Item("tests/api/test_b.py::one", {"postgres"}),
        Item("tests/unit/test_a.py::two", {"slow"}),
        Item("tests/e2e/test_c.py::one", {"e2e", "postgres"}),
        Item("tests/api/test_b.py::two"),
    ) == ["tests/e2e/test_c.py::one", "tests/unit/test_a.py::one", "tests/unit/test_a.py::two",
          "tests/api/test_b.py::one", "tests/api/test_b.py::two"]


def test_modules_of_one_rank_keep_the_collection_order() -> None:
    assert order(Item("tests/x/test_z.py::t"), Item("tests/x/test_a.py::t"),
                 Item("tests/x/test_m.py::t", {"k8s"})) == [
        "tests/x/test_m.py::t", "tests/x/test_z.py::t", "tests/x/test_a.py::t"]

"""Export then verify passes; flipping one byte makes verify fail at that line."""

from __future__ import annotations

import io

import pytest

from context_service.adapters.eventstore.export import export, verify
from context_service.bootstrap import Container
from tests.projections.history import write_history

pytestmark = pytest.mark.postgres


def _export(container: Container, namespace: str | None = None) -> list[bytes]:
    out = io.BytesIO()
    export(container.store, out, namespace)
    return out.getvalue().splitlines()


def test_export_then_verify_and_every_flipped_byte_is_caught(idle_container: Container) -> None:
    write_history(idle_container.contexts, seed=11, steps=60)
    rows = _export(idle_container)
    assert len(rows) == idle_container.store.head()
    assert verify(rows) == (len(rows), None, "ok")
    for line in (0, len(rows) // 2, len(rows) - 1):
        for offset in (0, 5, len(rows[line]) // 2, len(rows[line]) - 3):
            broken = list(rows)
            raw = bytearray(broken[line])
            raw[offset] ^= 0x01
            broken[line] = bytes(raw)
            _, first, _ = verify(broken)
            assert first == line + 1, (line, offset)


def test_dropping_or_reordering_lines_breaks_the_chain(idle_container: Container) -> None:
    write_history(idle_container.contexts, seed=5, steps=40)
    rows = _export(idle_container)
    assert verify(rows[:3] + rows[4:])[1] == 4
    assert verify([rows[1], rows[0], *rows[2:]])[1] == 1


def test_namespace_filter_keeps_only_that_namespace(idle_container: Container) -> None:
    write_history(idle_container.contexts, seed=5, steps=40)
    assert _export(idle_container, "elsewhere") == []
    assert verify(_export(idle_container, "ns"))[1] is None

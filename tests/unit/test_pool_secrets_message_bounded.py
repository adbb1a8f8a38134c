"""The refusal of a profile holding a literal secret (decision 0060) is as bounded as every
refusal (decision 0059): it names the field by its path, and a path through a template nested
200,000 levels deep was written whole, a 400 KB message, into the answer and the log."""

from __future__ import annotations

from typing import Any

from context_service.domain.pool.secrets import literal_secret

KEY = "ghp_" + "A" * 40


def test_the_path_of_a_deeply_nested_secret_is_shown_cut() -> None:
    deep: dict[str, Any] = {}
    level = deep
    for _ in range(200_000):
        level["a"] = {}
        level = level["a"]
    level["v"] = KEY
    found = literal_secret(deep)
    assert found is not None and "looks like a GitHub token" in found
    assert found.startswith("holds a literal secret at spec.a.a")
    assert len(found) < 600 and KEY not in found


def test_a_shallow_path_is_shown_whole() -> None:
    found = literal_secret({"podTemplate": {"metadata": {"annotations": {"note": KEY}}}})
    assert found is not None
    assert found.startswith("holds a literal secret at spec.podTemplate.metadata.annotations.note ")

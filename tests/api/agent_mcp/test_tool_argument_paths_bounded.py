"""The check of a tool call's arguments that no JSON body can carry (``not_json``, run by
``/mcp`` and ``contextctl mcp`` before any route) names the argument it refuses by its path:
that path shows each key cut to 64 code points and is at most 200 long (decision 0059), and
no path is written for the arguments it lets through. Before, the walk wrote the path of every
argument, each holding every key above it: 500 arguments under 100 keys of 4,000 characters
(a 405 KB call) held 191 MiB of paths, and a mebibyte of them gigabytes."""

from __future__ import annotations

import json
import tracemalloc
from typing import Any

import pytest

from context_service.contract.tools import not_json

ECHO, LONGEST = 64, 200  # decision 0059: code points of a key, of a whole path
DEPTH, KEY, SIBLINGS = 100, 4000, 500
MiB = 1024 * 1024


def _arguments(last: str) -> dict[str, Any]:
    """``SIBLINGS`` arguments under ``DEPTH`` nested keys of ``KEY`` characters, the last of
    them the JSON text ``last``."""
    inner = ",".join([*(f'"k{i}":1' for i in range(SIBLINGS - 1)), f'"end":{last}'])
    text = ('{"' + "a" * KEY + '":') * DEPTH + "{" + inner + "}" + "}" * DEPTH
    found: dict[str, Any] = json.loads(text)
    return found


def _peak(arguments: dict[str, Any]) -> tuple[Any, int]:
    tracemalloc.start()
    try:
        refused = not_json(arguments)
        return refused, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("last", ["1", "NaN"])
def test_the_walk_writes_no_path_but_the_refused_ones(last: str) -> None:
    arguments = _arguments(last)
    refused, peak = _peak(arguments)
    assert peak < 8 * MiB, peak / MiB  # was 191 MiB
    if last == "1":
        assert refused is None
        return
    assert refused is not None and refused.code == "INVALID_REQUEST"
    head = "malformed JSON arguments: "
    tail = " is not a finite number (NaN, Infinity, or beyond every double)"
    assert refused.message.startswith(head) and refused.message.endswith(tail), refused.message
    path = refused.message[len(head):-len(tail)]
    whole = "$" + ("." + "a" * ECHO + "\u2026") * DEPTH + ".end"
    assert path == whole[:LONGEST] + "\u2026"
    assert len(path) == LONGEST + 1


@pytest.mark.parametrize(("key", "path"), [
    ("k" * 100, "$." + "k" * ECHO + "\u2026"),
    ("k-\u00e9" * 40, '$["' + ("k-\u00e9" * 40)[:ECHO] + '\u2026"]'),
    ("short-key", '$["short-key"]'),
    ("plain", "$.plain"),
], ids=["long name", "long other key", "other key", "name"])
def test_a_refused_argument_is_named_by_its_path_its_key_cut(key: str, path: str) -> None:
    refused = not_json({"task": "cfo", "nested": [{key: float("nan")}]})
    assert refused is not None
    assert refused.message == (f"malformed JSON arguments: $.nested[0]{path[1:]} is not a finite "
                               "number (NaN, Infinity, or beyond every double)")


def test_a_lone_surrogate_key_names_its_object_by_its_path() -> None:
    refused = not_json({"k" * 100: {"\ud800": 1}})
    assert refused is not None
    assert refused.message == ("malformed JSON arguments: a key of $." + "k" * ECHO + "\u2026"
                               " holds a lone surrogate")

"""``/mcp``'s protocol errors name what they refuse cut, as every answer does (decision 0059):
an unknown tool's name and a made-up listing cursor are the caller's, up to the body's
mebibyte, and were sent back whole (the name in the message, the cursor in ``data``)."""

from __future__ import annotations

import json

from context_service.http.mcp import tools

HUGE = "x" * 1_000_000


def test_an_unknown_tools_name_is_shown_cut() -> None:
    error = tools.unknown_tool(HUGE).error
    assert error.code == -32602
    assert error.message.startswith("Unknown tool: xxx")
    assert len(error.message) < 200


def test_an_invalid_cursor_is_shown_cut() -> None:
    error = tools.invalid_cursor(HUGE).error
    assert error.code == -32602
    assert len(json.dumps(error.data)) < 200


def test_a_short_name_is_shown_whole() -> None:
    assert tools.unknown_tool("fetch_contxt").error.message == "Unknown tool: fetch_contxt"

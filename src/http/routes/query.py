"""Query index publication and memory/knowledge query (spec 1.7, 5)."""

from __future__ import annotations

from typing import Any

ROUTES: list[Any] = []

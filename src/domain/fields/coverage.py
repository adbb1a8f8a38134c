"""Coverage (§10.2): ⌊100·k/n⌋ percent, and a line for every field stated in fewer than 90%
of the documents (10·k < 9·n)."""

from __future__ import annotations

from collections.abc import Iterable


def coverage(k: int, n: int) -> int:
    return 100 * k // n if n else 0


def coverage_line(name: str, k: int, n: int) -> str | None:
    if 10 * k >= 9 * n:
        return None
    return f"{name}: stated in {k} of {n} documents ({coverage(k, n)}%)"


def coverage_lines(fields: Iterable[tuple[str, int]], n: int) -> list[str]:
    """The lines of these (name, documents stating it), sorted by field name."""
    lines = (coverage_line(name, k, n) for name, k in sorted(fields))
    return [line for line in lines if line is not None]

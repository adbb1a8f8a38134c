"""A development cluster's admin token file left readable by others (by a start of an earlier
version stopped between writing it and making it owner-only) is made owner-only by the next
start: it is kept, so nothing else would ever close it, and it holds a ``system:masters``
token."""

from __future__ import annotations

import os
from pathlib import Path

from tests.unit.test_cluster_credentials_made_whole import KEY, openssl, plane, stand_ins

__all__ = ["stand_ins"]  # the fixture, used by name


def test_a_token_file_left_readable_by_others_is_made_owner_only(
        tmp_path: Path, stand_ins: Path) -> None:
    openssl(stand_ins, f"printf '%s\\n' '{KEY}' > \"$out\"")
    tokens = tmp_path / "work" / "pki" / "tokens.csv"
    tokens.parent.mkdir(parents=True)
    tokens.write_text("0123456789abcdef,admin,admin,system:masters\n")
    os.chmod(tokens, 0o644)
    plane(tmp_path)._prepare()
    assert tokens.stat().st_mode & 0o077 == 0, oct(tokens.stat().st_mode)
    assert tokens.read_text() == "0123456789abcdef,admin,admin,system:masters\n"  # kept

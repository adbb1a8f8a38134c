"""The revision of an ingestion (pure): the documented digest, independent of the order files
were found in, changed by any byte, name, type or parameter; and the provenance body."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from pathlib import Path

from context_service.contextctl.ingestion.discovery import discover
from context_service.contextctl.ingestion.revision import digest, entry, provenance

PARAMS = {"maxTokens": "256", "chunker": "contextctl-ingest/2"}


def test_digest_as_documented() -> None:
    files = [entry("b.md", b"bee"), entry("a.md", b"ay")]
    expected = hashlib.sha256(
        b"type\x00knowledge\x00chunker\x00contextctl-ingest/2\x00maxTokens\x00256\x00"
        + b"a.md\x00" + hashlib.sha256(b"ay").hexdigest().encode() + b"\x002\x00"
        + b"b.md\x00" + hashlib.sha256(b"bee").hexdigest().encode() + b"\x003\x00").hexdigest()
    assert digest("knowledge", PARAMS, files) == expected
    assert digest("knowledge", PARAMS, files[::-1]) == expected
    assert len({expected, digest("memory", PARAMS, files),
                digest("knowledge", {**PARAMS, "maxTokens": "128"}, files),
                digest("knowledge", PARAMS, [entry("b.md", b"bee!"), files[1]]),
                digest("knowledge", PARAMS, [entry("c.md", b"bee"), files[1]])}) == 5


def test_provenance() -> None:
    files = [entry("a.md", b"ay"), entry("b.md", b"bee")]
    body = provenance("ab" * 32, PARAMS, files, datetime(2026, 5, 1, 10, 0, 0, 5, UTC))
    assert body == {"id": "ab" * 32, "createdAt": "2026-05-01T10:00:00Z", "operation": "ingest",
                    "producer": "contextctl", "parameters": PARAMS, "files": 2, "bytes": 5}


def test_names_relative_to_the_common_folder(tmp_path: Path) -> None:
    (tmp_path / "docs" / "deep").mkdir(parents=True)
    (tmp_path / "docs" / "deep" / "a.md").write_text("a")
    (tmp_path / "docs" / ".git").mkdir()
    (tmp_path / "docs" / ".git" / "x.md").write_text("x")
    (tmp_path / "README.md").write_text("r")
    (tmp_path / "docs" / "img.png").write_bytes(b"png")
    alone = discover([tmp_path / "docs"])
    assert [s.name for s in alone.sources] == ["deep/a.md"] and alone.ignored == ["img.png"]
    both = discover([tmp_path / "docs", tmp_path / "README.md", tmp_path / "docs" / "deep"])
    assert [(s.name, s.named) for s in both.sources] == [
        ("README.md", True), ("docs/deep/a.md", False)]

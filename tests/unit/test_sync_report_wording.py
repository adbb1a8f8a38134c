"""``ctx sync push`` and ``pull`` reports count in the singular where there is one of a thing,
as ``local capture`` does (``1 file, 38 bytes``): a report read aloud should not say
``1 files`` nor ``index of 1 records``."""
from __future__ import annotations

from typing import Any

import pytest

from context_service.contextctl import sync


def push_report(files: int, size: int, records: int) -> dict[str, Any]:
    return {"local": "notes", "namespace": "team1", "context": "notes", "type": "memory",
            "revision": "968165f23dac" + "0" * 52, "files": files, "bytes": size,
            "transferred": "/mnt/notes", "revisionPublished": True,
            "index": {"records": records, "published": True}}


def test_a_push_of_one_file_and_one_record_says_so_in_the_singular(
        capsys: pytest.CaptureFixture[str]) -> None:
    sync._print(push_report(1, 1, 1))
    out = capsys.readouterr().out
    assert "(1 file, 1 byte)" in out
    assert "index of 1 record published" in out


def test_a_push_of_several_keeps_the_plural(capsys: pytest.CaptureFixture[str]) -> None:
    sync._print(push_report(2, 38, 3))
    out = capsys.readouterr().out
    assert "(2 files, 38 bytes)" in out
    assert "index of 3 records published" in out


def test_a_pull_of_one_file_says_so_in_the_singular(capsys: pytest.CaptureFixture[str]) -> None:
    sync._print_pull({"namespace": "team1", "context": "notes", "local": "notes",
                      "revision": "968165f23dac" + "0" * 52, "changed": True, "files": 1,
                      "bytes": 38, "transferred": "/mnt/notes", "safetySnapshot": None})
    assert "(1 file, 38 bytes) from /mnt/notes" in capsys.readouterr().out

"""What ``contextctl ingest`` says when files cannot be ingested, in the number it names."""

from __future__ import annotations

import pytest

from context_service.contextctl.ingestion.api import IngestFailed
from context_service.contextctl.ingestion.reading import Skipped


@pytest.mark.parametrize(("failed", "total", "head"), [
    (1, 1, "the file cannot be ingested; nothing was published:"),
    (2, 2, "none of the 2 files can be ingested; nothing was published:"),
    (1, 3, "1 of 3 files cannot be ingested; nothing was published (--skip-bad publishes the "
           "others):"),
])
def test_the_head_line_counts_the_files_as_a_person_says_it(
        failed: int, total: int, head: str) -> None:
    said = str(IngestFailed([Skipped(f"f{i}.md", "empty file") for i in range(failed)], total))
    assert said.splitlines()[0] == head
    assert said.splitlines()[1:] == [f"  f{i}.md: empty file" for i in range(failed)]

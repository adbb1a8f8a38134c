"""What an ingestion did, for people and for scripts (``--json``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from context_service.contextctl.ingestion.reading import Note, Skipped

PUBLISHED = "published"  # a new revision and its index
INDEXED = "indexed"  # the revision was current already; its index was (re)sent
UNCHANGED = "unchanged"  # the revision and its index were current: nothing was recorded
DRY_RUN = "dry-run"  # nothing was sent


@dataclass(frozen=True, slots=True)
class IngestReport:
    context: str
    namespace: str
    type: str
    outcome: str
    revision: str
    files: int
    bytes: int
    passages: int
    tokens: int
    parameters: dict[str, str]
    position: int | None = None  # the log position of the index's publication
    created: bool = False  # the context was created by this run
    skipped: list[Skipped] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)
    notes: list[Note] = field(default_factory=list)  # what read files held that was not read
    records: list[dict[str, Any]] = field(default_factory=list)  # dry runs only
    record_tokens: list[int] = field(default_factory=list)  # dry runs only: each record's

    @property
    def recorded(self) -> bool:
        return self.outcome in (PUBLISHED, INDEXED)

    def as_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "context": self.context, "namespace": self.namespace, "type": self.type,
            "outcome": self.outcome, "recorded": self.recorded, "created": self.created,
            "revision": self.revision, "position": self.position, "files": self.files,
            "bytes": self.bytes, "passages": self.passages, "tokens": self.tokens,
            "parameters": self.parameters,
            "skipped": [{"file": s.file, "reason": s.reason} for s in self.skipped],
            "ignored": self.ignored,
            "notes": [{"file": n.file, "note": n.note} for n in self.notes]}
        if self.outcome == DRY_RUN:
            data["records"] = self.records
        return data

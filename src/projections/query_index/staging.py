"""The open upload of one context as the query_index projection folds a batch: parts staged in
the batch are held here, parts staged before sit in the view (``query_staged_parts``) and are
read only when the upload's publication needs them (the fold of ``index_parts``, over a table).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from context_service.domain.context.events import (
    QueryIndexPartStaged,
    QueryIndexPublished,
    QueryRecord,
)
from context_service.domain.context.index_parts import join_parts

UploadKey = tuple[str, str]  # (revision, upload id)
FetchParts = Callable[[Sequence[int]], dict[int, tuple[QueryRecord, ...]]]


@dataclass(slots=True)
class Staging:
    stored: UploadKey | None  # the upload whose parts the view holds (before the batch)
    key: UploadKey | None = None  # the open upload after the events folded so far
    parts: dict[int, tuple[QueryRecord, ...]] = field(default_factory=dict)  # of ``key``
    void: bool = False  # the view's parts no longer belong to the open upload

    def __post_init__(self) -> None:
        self.key = self.stored

    def stage(self, event: QueryIndexPartStaged) -> None:
        key = (event.revision, event.upload_id)
        if key != self.key:
            self.close()
            self.key = key
        self.parts[event.part] = event.records

    def publish(self, event: QueryIndexPublished, fetch: FetchParts) -> tuple[QueryRecord, ...]:
        records = event.records
        if event.upload_id:
            parts = dict(self.parts)
            if (event.revision, event.upload_id) == self.key and not self.void:
                missing = [k for k in range(1, event.parts + 1) if k not in parts]
                if missing:
                    parts.update(fetch(missing))
            records = join_parts(parts, event.parts)
        self.close()
        return records

    def close(self) -> None:
        self.void = self.void or self.stored is not None
        self.key, self.parts = None, {}

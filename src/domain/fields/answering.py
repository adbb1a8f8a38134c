"""Which index answers a field request (§10.4 knownAt) and how its citations are judged live
(§10.1), independent of where the rows come from."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from context_service.domain.fields.citation import citation
from context_service.domain.fields.source import Citations
from context_service.domain.fields.values import Stated

Json = dict[str, Any]


class HeadCitations:
    """Values read from the current usable index itself: the stating record is in it with the
    very text its span covered, so only a missing span leaves a value uncited."""

    def cite(self, stated: Stated) -> tuple[Json | None, str | None]:
        if stated.span is None or stated.quote is None:
            return None, "no_span"
        start, end = stated.span
        return {"recordId": stated.record_id, "documentId": stated.document_id, "start": start,
                "end": end, "quote": stated.quote}, None


class LiveCitations:
    """Values from an earlier index: each record looked up in the current usable index
    (``texts``: record id -> current text, None when the collection has none now)."""

    def __init__(self, texts: Callable[[], dict[str, str] | None]) -> None:
        self._texts = texts
        self._loaded: dict[str, str] | None = None
        self._done = False

    def cite(self, stated: Stated) -> tuple[Json | None, str | None]:
        if stated.span is None:
            return None, "no_span"
        if not self._done:
            self._loaded, self._done = self._texts(), True
        current = self._loaded.get(stated.record_id) if self._loaded is not None else None
        return citation(stated, current)


class ReadableCitations:
    """``inner``'s citations while the collection is still readable: access is read again
    (``readable_now``, once) when the first value with a span is cited, so a collection
    un-granted while the plan ran leaves every such value uncited, ``record_unavailable``, as
    a pack's release check drops the items of a collection un-granted while it was packed."""

    def __init__(self, inner: Citations, readable_now: Callable[[], bool]) -> None:
        self._inner = inner
        self._readable_now = readable_now
        self._readable: bool | None = None

    def cite(self, stated: Stated) -> tuple[Json | None, str | None]:
        if stated.span is None:
            return None, "no_span"
        if self._readable is None:
            self._readable = self._readable_now()
        if not self._readable:
            return None, "record_unavailable"
        return self._inner.cite(stated)

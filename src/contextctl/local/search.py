"""Local query over the store's memory and knowledge contexts: the service's context selection
(spec 5.1 steps 2 to 5, without authorization: every local context is the user's own) and its
search (spec 5.2) through the rules the service itself uses (``context_service.lexical``).

The records are computed from the files as they are now, so a local index is never stale: a
context is unavailable only when its record source does not exist (spec 5.3)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from context_service.contextctl.local.errors import LocalStoreError
from context_service.contextctl.local.records import INDEXED_TYPES
from context_service.contextctl.local.store import LocalContext, LocalStore
from context_service.lexical import order_key, query_terms, score, weighted_terms

MAX_LIMIT = 100


def search(store: LocalStore, query: str, contexts: Sequence[str] = (),
           types: Sequence[str] = (), source_contexts: Sequence[str] = (),
           revisions: Sequence[str] = (), ids: Sequence[str] = (),
           limit: int = 20) -> tuple[list[dict[str, Any]], list[str]]:
    """``([{"score", "record"}, ...], unavailable context names)``, best first, at most
    ``limit`` results."""
    chosen = resolve(store, contexts)
    if not query.strip() and not ids:
        raise LocalStoreError("query or ids is required")
    if not 1 <= limit <= MAX_LIMIT:
        raise LocalStoreError(f"limit must be between 1 and {MAX_LIMIT}")
    candidates: list[dict[str, Any]] = []
    unavailable: list[str] = []
    for context in chosen:
        if context.type not in INDEXED_TYPES:
            continue  # neither searched nor unavailable
        records = context.records()
        if records is None:
            unavailable.append(context.name)
        else:
            candidates.extend(records)
    results = rank(candidates, query, types, source_contexts, revisions, ids)
    return results[:limit], unavailable


def resolve(store: LocalStore, names: Sequence[str]) -> list[LocalContext]:
    """Every context when no name is given, else each named one (duplicates once); by name."""
    if not names:
        return store.contexts()
    found = [store.open(name) for name in dict.fromkeys(names)]
    return sorted(found, key=lambda c: c.name)


def rank(records: Iterable[dict[str, Any]], query: str, types: Sequence[str] = (),
         source_contexts: Sequence[str] = (), revisions: Sequence[str] = (),
         ids: Sequence[str] = ()) -> list[dict[str, Any]]:
    """The filtered, scored and ordered results of spec 5.2 (records scoring 0 dropped)."""
    terms = query_terms(query)
    scored = []
    for record in records:
        if not _passes(record, types, source_contexts, revisions, ids):
            continue
        title, keywords, text = (_text(record.get("title")), _strings(record.get("keywords")),
                                 _text(record.get("text")))
        if terms and not _may_match(terms, title, keywords, text):
            continue  # scores 0: no term is even part of its lowercased fields
        value = score(weighted_terms(title, keywords, text), terms)
        if value > 0:
            scored.append((order_key(value, _text(record.get("context")),
                                     _text(record.get("id"))), value, record))
    scored.sort(key=lambda item: item[0])  # stable: equal keys keep the contexts' order
    return [{"score": value, "record": record} for _, value, record in scored]


def _may_match(terms: Iterable[str], title: str, keywords: list[str], text: str) -> bool:
    """Whether some term occurs in the lowercased fields at all: a token of them is a substring
    of them (the tokenizer lowercases, then splits), so a record failing this scores 0, and
    most records of a large context are passed over without being tokenized."""
    fields = "\n".join((title, " ".join(keywords), text)).lower()
    return any(term in fields for term in terms)


def _passes(record: dict[str, Any], types: Sequence[str], source_contexts: Sequence[str],
            revisions: Sequence[str], ids: Sequence[str]) -> bool:
    source = record.get("source")
    source_context = source.get("context", "") if isinstance(source, dict) else ""
    return ((not types or record.get("type") in types)
            and (not source_contexts or source_context in source_contexts)
            and (not revisions or record.get("revision") in revisions)
            and (not ids or record.get("id") in ids))


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _strings(value: Any) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []

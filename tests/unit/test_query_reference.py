"""A straightforward reference of the spec's search (5.2), written from the text alone, and the
checks that the service's pure building blocks agree with it.

The reference works on records in their wire form (dicts) and shares no code with the service:
character classes come from ``unicodedata``, occurrences are counted by scanning token lists.
The API property test and the benchmark import ``reference_search``.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from context_service.domain.query.scoring import query_terms, score, weighted_terms
from context_service.domain.query.tokenizer import tokenize

Record = dict[str, Any]


def reference_tokenize(text: str) -> list[str]:
    """Lowercase, then split on every character that is neither a letter nor a digit."""
    tokens: list[str] = []
    current = ""
    for char in text.lower():
        category = unicodedata.category(char)
        if category.startswith("L") or category == "Nd":
            current += char
        else:
            if current:
                tokens.append(current)
            current = ""
    if current:
        tokens.append(current)
    return tokens


def reference_score(record: Record, terms: Sequence[str],
                    tokens: tuple[list[str], list[str], list[str]] | None = None) -> int:
    """Spec 5.2 score; ``tokens`` are the record's (title, keywords, text) tokens if known."""
    if not terms:
        return 1
    if tokens is None:
        tokens = record_tokens(record)
    title, keywords, text = tokens
    return sum(3 * title.count(t) + 2 * keywords.count(t) + text.count(t) for t in terms)


def record_tokens(record: Record) -> tuple[list[str], list[str], list[str]]:
    return (reference_tokenize(record.get("title", "")),
            reference_tokenize(" ".join(record.get("keywords", []))),
            reference_tokenize(record["text"]))


def reference_search(records: Sequence[Record], query: str = "", types: Sequence[str] = (),
                     source_contexts: Sequence[str] = (), revisions: Sequence[str] = (),
                     ids: Sequence[str] = (),
                     tokens: Sequence[tuple[list[str], list[str], list[str]]] | None = None,
                     ) -> list[tuple[int, Record]]:
    """Every result, in order. ``records`` are the candidates: the usable contexts' records,
    contexts in name order, each index in publish order."""
    terms = reference_tokenize(query)
    results: list[tuple[int, Record]] = []
    for i, record in enumerate(records):
        if types and record["type"] not in types:
            continue
        if source_contexts and record["source"]["context"] not in source_contexts:
            continue
        if revisions and record["revision"] not in revisions:
            continue
        if ids and record["id"] not in ids:
            continue
        value = reference_score(record, terms, tokens[i] if tokens is not None else None)
        if value > 0:
            results.append((value, record))
    results.sort(key=lambda pair: (-pair[0], pair[1]["context"], pair[1]["id"]))
    return results


# --- the reference against the spec's own example ----------------------------------------------

WORKED = [
    {"id": "a", "context": "m", "type": "memory", "revision": "r", "title": "Release schedule",
     "text": "Friday release schedule", "source": {"context": "", "type": "", "revision": ""}},
    {"id": "b", "context": "m", "type": "memory", "revision": "r", "title": "Release",
     "text": "release schedule", "source": {"context": "", "type": "", "revision": ""}},
    {"id": "c", "context": "m", "type": "memory", "revision": "r", "title": "Unrelated",
     "text": "nothing here", "source": {"context": "", "type": "", "revision": ""}},
]


def test_reference_reproduces_the_worked_example() -> None:
    found = reference_search(WORKED, "release schedule")
    assert [(s, r["id"]) for s, r in found] == [(8, "a"), (5, "b")]


def test_reference_tokenizer_matches_the_spec_example() -> None:
    assert reference_tokenize("Release-schedule v2!") == ["release", "schedule", "v2"]


# --- the service's building blocks agree with the reference ------------------------------------

alphabet = st.one_of(
    st.sampled_from("aAbB zZ09-_.,!?'\"\t\n²½Ⅻ٣éÉßİ\u03a3\u03c3\u03c2日本語ǅ\u0301\u200d"),
    st.characters(codec="utf-8"),
)
texts = st.text(alphabet, max_size=40)


@given(texts)
def test_tokenizer_agrees_with_the_reference(text: str) -> None:
    assert tokenize(text) == reference_tokenize(text)


@given(title=texts, keywords=st.lists(texts, max_size=3), text=texts, query=texts)
def test_weighted_scoring_agrees_with_the_reference(title: str, keywords: list[str], text: str,
                                                    query: str) -> None:
    record = {"title": title, "keywords": keywords, "text": text}
    expected = reference_score(record, reference_tokenize(query))
    assert score(weighted_terms(title, keywords, text), query_terms(query)) == expected

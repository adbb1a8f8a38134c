"""The deterministic lexical search rules of spec 5.2, shared by the service's query index and
``contextctl``'s local store: the tokenizer, the field weights, the query terms, the score and
the result order. Standard library only, so both sides import it without pulling in the other.

Tokenizer: Unicode lowercasing, then maximal runs of letters and digits. A letter is any
character of Unicode general category L*, a digit one of category Nd. ASCII text (the common
case) takes a fast path: every other byte becomes a space and the text is split. Other text goes
through a regex for runs of alphanumerics (which also admits numerics such as ``²`` or ``Ⅻ``);
such a run is then split again at every character that is neither a letter nor a Nd digit.

Score: the sum over the query's terms (duplicates kept) of the term's weighted frequency in the
record: 3 per occurrence in the title, 2 in the keywords (joined with spaces), 1 in the text.
Weighted frequencies are what the service's index stores per (term, record).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence

TITLE_WEIGHT = 3
KEYWORD_WEIGHT = 2
TEXT_WEIGHT = 1

_ALNUM_RUN = re.compile(r"[^\W_]+")
_ASCII_SEPARATORS = bytes(b if chr(b).isascii() and chr(b).isalnum() else 0x20
                          for b in range(256))


def tokenize(text: str) -> list[str]:
    """The tokens of ``text`` in order, duplicates kept."""
    lowered = text.lower()
    if lowered.isascii():
        return lowered.encode("ascii").translate(_ASCII_SEPARATORS).decode("ascii").split()
    tokens: list[str] = []
    for run in _ALNUM_RUN.findall(lowered):
        if run.isascii():
            tokens.append(run)
        else:
            tokens.extend(_split_run(run))
    return tokens


def _split_run(run: str) -> list[str]:
    """Split a run at characters that are numeric but neither a letter nor a decimal digit."""
    parts: list[str] = []
    start = 0
    for i, char in enumerate(run):
        if not (char.isalpha() or char.isdecimal()):
            if i > start:
                parts.append(run[start:i])
            start = i + 1
    if start < len(run):
        parts.append(run[start:])
    return parts


def weighted_terms(title: str, keywords: Sequence[str], text: str) -> dict[str, int]:
    """Each distinct term of a record with its weighted frequency (always positive)."""
    weights: Counter[str] = Counter(tokenize(text))
    for token in tokenize(" ".join(keywords)):
        weights[token] += KEYWORD_WEIGHT
    for token in tokenize(title):
        weights[token] += TITLE_WEIGHT
    return dict(weights)


def query_terms(query: str) -> dict[str, int]:
    """Each distinct query term with how often the query repeats it."""
    return dict(Counter(tokenize(query)))


def score(weights: Mapping[str, int], terms: Mapping[str, int]) -> int:
    """A record's score; 1 for every record when the query has no terms."""
    if not terms:
        return 1
    return sum(count * weights.get(term, 0) for term, count in terms.items())


def order_key(score_: int, context: str, record_id: str) -> tuple[int, str, str]:
    """Score descending, then context and id ascending by code point."""
    return (-score_, context, record_id)

"""Normalised text, 5-shingles and duplicates (§5.5), and the token tests packing uses."""

from __future__ import annotations

import hashlib
from array import array
from fractions import Fraction
from typing import NamedTuple

from context_service.domain.query.tokenizer import tokenize

SHINGLE = 5
NEAR_DUPLICATE = Fraction(4, 5)

Shingle = str  # its tokens joined by single spaces (tokens hold no space, so this is exact)


def normalised(text: str) -> str:
    """The text's query tokens joined with single spaces."""
    return " ".join(tokenize(text))


def shingles(text: str) -> frozenset[Shingle]:
    """The distinct runs of 5 consecutive tokens; one shingle (every token) when fewer."""
    return shingles_of(tokenize(text))


def shingles_of(tokens: list[str]) -> frozenset[Shingle]:
    """``shingles`` of an already tokenized text. A shingle is a string, not a tuple: strings
    are not tracked by the garbage collector, so a walk over hundreds of passages does not set
    off collections."""
    if len(tokens) < SHINGLE:
        return frozenset((" ".join(tokens),))
    return frozenset(map(" ".join, zip(tokens, tokens[1:], tokens[2:], tokens[3:], tokens[4:],
                                       strict=False)))


def jaccard(a: frozenset[Shingle], b: frozenset[Shingle]) -> Fraction:
    union = len(a | b)
    return Fraction(len(a & b), union) if union else Fraction(1)


def near_duplicates(a: frozenset[Shingle], b: frozenset[Shingle]) -> bool:
    """Jaccard similarity at least 0.8, compared exactly."""
    return jaccard(a, b) >= NEAR_DUPLICATE


def text_sha256(text: str) -> bytes:
    """SHA-256 of the normalised text: equal digests make exact duplicates."""
    return hashlib.sha256(normalised(text).encode()).digest()


def occurs_in(phrase: list[str], tokens: list[str]) -> int:
    """The first index where ``phrase`` is a contiguous run of ``tokens``; -1 when it is not
    (an empty phrase never occurs)."""
    n = len(phrase)
    if not n:
        return -1
    for i in range(len(tokens) - n + 1):
        if tokens[i:i + n] == phrase:
            return i
    return -1


class Signature(NamedTuple):
    """What deduplication keeps of a passage's text: ``prefix`` (``prefix_signature``), the
    number of its distinct shingles, and every shingle's hash, sorted. ``injective``: no two
    of its shingles share a hash, so a count of shared hashes is never below the count of
    shared shingles (the near-duplicate test on hashes can only err towards "maybe")."""

    prefix: array[int]
    size: int
    hashes: array[int]
    injective: bool


def prefix_signature(text: str) -> array[int]:
    """The prefix-filter signature of the text's shingles for Jaccard >= 4/5: sorted hashes.

    Two sets with J >= 4/5 share at least ceil(4/5 max(|A|, |B|)) shingles, so, with shingles
    ordered by hash, the first |A| - ceil(4|A|/5) + 1 of A and the first |B| - ceil(4|B|/5) + 1
    of B contain the hash of their shared shingle of least hash (the prefix takes every shingle
    whose hash is at most the last one's, so hash ties cannot hide it). A pair whose signatures
    share a hash is then compared exactly. Hashes are those of this process: a signature is
    never stored or compared across processes."""
    return signature(text).prefix


def signature(text: str) -> Signature:
    """The text's ``Signature``."""
    hashes = sorted(map(hash, shingles(text)))
    last = hashes[len(hashes) - (4 * len(hashes) + 4) // 5]
    return Signature(array("q", (h for h in hashes if h <= last)), len(hashes),
                     array("q", hashes), len(set(hashes)) == len(hashes))


def may_be_near(size_a: int, size_b: int) -> bool:
    """Whether sets of these sizes can have Jaccard >= 4/5 (it is at most min / max)."""
    return 5 * min(size_a, size_b) >= 4 * max(size_a, size_b)


def shares_enough(shared: int, size_a: int, size_b: int) -> bool:
    """Whether sets of these sizes sharing ``shared`` elements have Jaccard >= 4/5, exactly."""
    return 5 * shared >= 4 * (size_a + size_b - shared)

"""Normalised text, 5-shingles and duplicates (§5.5), and the token tests packing uses."""

from __future__ import annotations

import hashlib
from array import array
from collections.abc import Iterable
from fractions import Fraction
from itertools import count, islice
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


# --- exact shingle keys ------------------------------------------------------------------------
#
# Deduplication compares shingle sets as sets of byte strings rather than of joined tokens: each
# distinct token gets an id (one table for the whole process, so keys compare across
# collections), a text becomes the bytes of its token ids, and a shingle becomes the slice of
# those bytes that holds its five ids. Ids are distinct for distinct tokens, so two slices are
# equal exactly when their shingles are, and the shingle set of a text is the set of its slices
# (same size, same intersections). A set of slices is built with one C-level map, about twice as
# fast as joining tokens, and the bytes take 4 bytes a token to keep.

_TOKEN_IDS: dict[str, int] = {}
_NEXT_ID = count()  # next() is atomic: two threads interning one token agree on its id
_WIDTH = array("I").itemsize  # bytes of one token id
_SHINGLE_BYTES = SHINGLE * _WIDTH


def token_ids() -> int:
    """How many distinct tokens have an id (the table only grows: one entry a distinct token
    the process has seen in a passage)."""
    return len(_TOKEN_IDS)


def token_keys(text: str) -> bytes:
    """The bytes of the ids of the text's tokens, in order (ids of this process only)."""
    known = _TOKEN_IDS.get
    intern = _TOKEN_IDS.setdefault
    return array("I", [intern(t, next(_NEXT_ID)) if (i := known(t)) is None else i
                       for t in tokenize(text)]).tobytes()


_HELD_SLICES = 1 << 16  # slices kept for reuse: texts of up to 65,540 tokens
_slices: tuple[slice, ...] = ()


def _shingle_slices(tokens: int) -> Iterable[slice]:
    """Where the shingles of a text of ``tokens`` tokens lie in its ``token_keys``: the first
    ``tokens - 4`` of one tuple of slices that grows to the longest text seen (up to a bound)."""
    global _slices
    if tokens < SHINGLE:
        return (slice(0, tokens * _WIDTH),)
    wanted = tokens - SHINGLE + 1
    if wanted > _HELD_SLICES:
        return (slice(i, i + _SHINGLE_BYTES) for i in range(0, wanted * _WIDTH, _WIDTH))
    held = _slices
    if wanted > len(held):
        held = _slices = tuple(slice(i, i + _SHINGLE_BYTES)
                               for i in range(0, min(max(wanted, 2 * len(held)), _HELD_SLICES)
                                              * _WIDTH, _WIDTH))
    return islice(held, wanted)


def shingle_keys(keys: bytes) -> frozenset[bytes]:
    """The shingle set of a text as slices of its ``token_keys``: the same size as its
    ``shingles`` and, between two texts, the same intersection (a text of fewer than 5 tokens
    has one key, shorter than any 5-shingle's, as its one shingle is)."""
    return frozenset(map(keys.__getitem__, _shingle_slices(len(keys) // _WIDTH)))


_FIRST_LOOK = 48  # shingles counted before a pair may be ruled out early


def near_keys(keys: bytes, size: int, theirs: frozenset[bytes]) -> bool:
    """Whether the text of ``keys`` (``token_keys``, with ``size`` distinct shingles) and the
    text whose shingle set is ``theirs`` (``shingle_keys``) are near duplicates, exactly.

    When every shingle of the text is distinct (nearly always), its shingles are counted in
    ``theirs`` one by one, without building its set, and a pair is ruled out as soon as its
    first shingles miss more than Jaccard >= 4/5 allows; otherwise the two sets are
    intersected."""
    tokens = len(keys) // _WIDTH
    if tokens - SHINGLE + 1 != size:  # repeated shingles (or a short text): count distinct ones
        return shares_enough(len(shingle_keys(keys) & theirs), size, len(theirs))
    shared_at_least = -(-4 * (size + len(theirs)) // 9)  # Jaccard >= 4/5 <=> shared >= this
    mine = map(keys.__getitem__, _shingle_slices(tokens))
    first = sum(map(theirs.__contains__, islice(mine, _FIRST_LOOK)))
    if min(size, _FIRST_LOOK) - first > size - shared_at_least:
        return False
    return first + sum(map(theirs.__contains__, mine)) >= shared_at_least


class Signature(NamedTuple):
    """What deduplication keeps of a passage's text: ``prefix`` (``prefix_signature``), the
    number of its distinct shingles, its ``token_keys`` (from which ``shingle_keys`` gives its
    shingle set exactly), and ``injective``: no two of its shingles share a hash, which the
    prefix bound of the walk relies on."""

    prefix: array[int]
    size: int
    keys: bytes
    injective: bool


def prefix_signature(text: str) -> array[int]:
    """The prefix-filter signature of the text's shingles for Jaccard >= 4/5: sorted hashes.

    Two sets with J >= 4/5 share at least ceil(4/5 max(|A|, |B|)) shingles, so, with shingles
    ordered by hash, the first |A| - ceil(4|A|/5) + 1 of A and the first |B| - ceil(4|B|/5) + 1
    of B contain the hash of their shared shingle of least hash (the prefix takes every shingle
    whose hash is at most the last one's, so hash ties cannot hide it). A pair whose signatures
    share a hash is then compared exactly. Hashes (of ``shingle_keys``) are those of this
    process: a signature is never stored or compared across processes."""
    return signature(text).prefix


def signature(text: str) -> Signature:
    """The text's ``Signature``."""
    keys = token_keys(text)
    hashes = sorted(map(hash, shingle_keys(keys)))
    last = hashes[len(hashes) - (4 * len(hashes) + 4) // 5]
    return Signature(array("q", (h for h in hashes if h <= last)), len(hashes), keys,
                     len(set(hashes)) == len(hashes))


def may_be_near(size_a: int, size_b: int) -> bool:
    """Whether sets of these sizes can have Jaccard >= 4/5 (it is at most min / max)."""
    return 5 * min(size_a, size_b) >= 4 * max(size_a, size_b)


def shares_enough(shared: int, size_a: int, size_b: int) -> bool:
    """Whether sets of these sizes sharing ``shared`` elements have Jaccard >= 4/5, exactly."""
    return 5 * shared >= 4 * (size_a + size_b - shared)

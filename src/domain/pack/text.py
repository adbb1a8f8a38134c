"""Normalised text, 5-shingles and duplicates (§5.5), and the token tests packing uses."""

from __future__ import annotations

import hashlib
import sys
import threading
from array import array
from collections.abc import Iterable
from fractions import Fraction
from itertools import count, islice
from typing import NamedTuple
from zlib import crc32

from context_service.domain.bounded import Gauge, MiB, cache_gauges
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


# --- exact shingle keys ------------------------------------------------------------------------
#
# Deduplication compares shingle sets as sets of byte strings rather than of joined tokens: each
# distinct token gets an id (one table for every collection, so keys compare across
# collections), a text becomes the bytes of its token ids, and a shingle becomes the slice of
# those bytes that holds its five ids. Ids are distinct for distinct tokens, so two slices are
# equal exactly when their shingles are, and the shingle set of a text is the set of its slices
# (same size, same intersections). A set of slices is built with one C-level map, about twice as
# fast as joining tokens, and the bytes take 4 bytes a token to keep.
#
# The table is a generation (``TokenTable``): it holds the tokens of the texts signed since it
# began, is bounded in bytes, and is replaced by an empty one when it passes its bound or when
# most of its tokens came from corpora since dropped. A signature carries its generation and is
# computed again when stale; a walk keeps one generation from start to end, so every pair it
# compares has ids of one table.

TABLE_BYTES = 64 * MiB  # the token table's bound, in estimated bytes
_INT_BYTES = 28  # an id's int object (ids below 257 are shared, the rest are not)
_WIDTH = array("I").itemsize  # bytes of one token id
_SHINGLE_BYTES = SHINGLE * _WIDTH
_LOOK_EVERY = 1024  # new tokens between two looks at the table's bytes


class TokenTable:
    """One generation of token ids: ``ids`` by token, and each id's ``mark`` (the CRC-32 of
    the token's UTF-8 bytes), from which shingle hashes are made that do not depend on the
    process (nor on the order tokens were first seen)."""

    def __init__(self, generation: int) -> None:
        self.generation = generation
        self.ids: dict[str, int] = {}
        self.marks = array("I")  # by id
        self.text_bytes = 0  # what the token strings take
        self.released = 0  # ids first given for corpora since dropped
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self.ids)

    def ids_of(self, tokens: Iterable[str]) -> list[int]:
        """The ids of ``tokens``, giving new ones an id."""
        known = self.ids.get
        intern = self._intern
        return [intern(t) if (i := known(t)) is None else i for t in tokens]

    def _intern(self, token: str) -> int:
        with self._lock:  # the id is the token's position in ``marks``: one writer at a time
            found = self.ids.get(token)
            if found is not None:
                return found
            found = len(self.marks)
            self.marks.append(crc32(token.encode()))
            self.ids[token] = found
            self.text_bytes += sys.getsizeof(token)
        if not found % _LOOK_EVERY and self.bytes() > _limit:
            _retire(self)
        return found

    def bytes(self) -> int:
        """The table's estimated bytes: the dictionary, its strings and ints, the marks."""
        return (sys.getsizeof(self.ids) + self.text_bytes + _INT_BYTES * len(self.ids)
                + self.marks.itemsize * len(self.marks))


_generations = count(1)
_table = TokenTable(0)
_limit = TABLE_BYTES


def token_table() -> TokenTable:
    """The current generation."""
    return _table


def _retire(table: TokenTable) -> None:
    """Start a new generation, unless ``table`` was replaced already. The old table lives on
    only while a walk or a signature being computed still holds it."""
    global _table
    if _table is table:
        _table = TokenTable(next(_generations))


def set_table_limit(limit: int) -> int:
    """Set the table's bound in bytes; the previous bound."""
    global _limit
    previous, _limit = _limit, limit
    return previous


def release_tokens(claims: dict[int, int]) -> None:
    """A corpus was dropped: ``claims`` counts, by generation, the ids first given for its
    texts. When most ids of the current table were given for dropped corpora (and it is not
    small), a new generation starts, so the tokens of deleted or replaced indexes go."""
    table = _table
    released = claims.get(table.generation, 0)
    if not released:
        return
    table.released += released
    if 2 * table.released > len(table) and table.bytes() > _limit // 8:
        _retire(table)


def token_ids() -> int:
    """How many distinct tokens have an id in the current table."""
    return len(_table)


def token_table_gauges() -> list[Gauge]:
    """The current table's tokens and estimated bytes against its bound (``cs_cache_*``,
    cache ``pack_token_ids``)."""
    table = _table
    return cache_gauges("pack_token_ids", len(table), table.bytes(), _limit)


def token_keys(text: str, table: TokenTable | None = None) -> bytes:
    """The bytes of the ids of the text's tokens, in order (ids of ``table``, by default the
    current one)."""
    return array("I", (_table if table is None else table).ids_of(tokenize(text))).tobytes()


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
    text whose shingle set is ``theirs`` (``shingle_keys``) are near duplicates, exactly."""
    return near_keys_counted(keys, size, theirs)[0]


def near_keys_counted(keys: bytes, size: int, theirs: frozenset[bytes]) -> tuple[bool, int]:
    """``near_keys``, and how many shingles it looked up (the work the walk counts).

    When every shingle of the text is distinct (nearly always), its shingles are counted in
    ``theirs`` one by one, without building its set, and a pair is ruled out as soon as its
    first shingles miss more than Jaccard >= 4/5 allows; otherwise the two sets are
    intersected."""
    tokens = len(keys) // _WIDTH
    if tokens - SHINGLE + 1 != size:  # repeated shingles (or a short text): count distinct ones
        return (shares_enough(len(shingle_keys(keys) & theirs), size, len(theirs)),
                max(tokens - SHINGLE + 1, 1))
    shared_at_least = -(-4 * (size + len(theirs)) // 9)  # Jaccard >= 4/5 <=> shared >= this
    mine = map(keys.__getitem__, _shingle_slices(tokens))
    first = sum(map(theirs.__contains__, islice(mine, _FIRST_LOOK)))
    if min(size, _FIRST_LOOK) - first > size - shared_at_least:
        return False, min(size, _FIRST_LOOK)
    return first + sum(map(theirs.__contains__, mine)) >= shared_at_least, size


class Signature(NamedTuple):
    """What deduplication keeps of a passage's text: ``prefix`` (``prefix_signature``), the
    number of its distinct shingles, its ``token_keys`` (from which ``shingle_keys`` gives its
    shingle set exactly), ``injective``: no two of its shingles share a hash, which the prefix
    bound of the walk relies on, and the ``generation`` of the token table its keys are of."""

    prefix: array[int]
    size: int
    keys: bytes
    injective: bool
    generation: int


def prefix_signature(text: str) -> array[int]:
    """The prefix-filter signature of the text's shingles for Jaccard >= 4/5: sorted hashes.

    Two sets with J >= 4/5 share at least ceil(4/5 max(|A|, |B|)) shingles, so, with shingles
    ordered by hash, the first |A| - ceil(4|A|/5) + 1 of A and the first |B| - ceil(4|B|/5) + 1
    of B contain the hash of their shared shingle of least hash (the prefix takes every shingle
    whose hash is at most the last one's, so hash ties cannot hide it). A pair whose signatures
    share a hash is then compared exactly. A shingle's hash is that of the tuple of its tokens'
    marks (integers, whose hashes no seed changes): the same in every process and generation,
    so which pairs a walk compares, and the work it counts, depend on the texts alone."""
    return signature(text).prefix


def signature(text: str, table: TokenTable | None = None) -> Signature:
    """The text's ``Signature``, with ids of ``table`` (by default the current one)."""
    table = _table if table is None else table
    ids = table.ids_of(tokenize(text))
    keys = array("I", ids).tobytes()
    marks = list(map(table.marks.__getitem__, ids))
    distinct = set(map(hash, _runs(marks)))
    # as many hashes as shingles: every shingle is distinct, and so is its hash (nearly
    # always, and then the key set need not be built to count them)
    runs = max(len(ids) - SHINGLE + 1, 1)
    size = runs if len(distinct) == runs else len(shingle_keys(keys))
    if len(distinct) == size:
        hashes = sorted(distinct)
    else:  # two distinct shingles share a hash: one hash per distinct shingle
        by_key = dict(zip(map(keys.__getitem__, _shingle_slices(len(ids))),
                          map(hash, _runs(marks)), strict=True))
        hashes = sorted(by_key.values())
    last = hashes[len(hashes) - (4 * len(hashes) + 4) // 5]
    return Signature(array("q", (h for h in hashes if h <= last)), size, keys,
                     len(distinct) == size, table.generation)


def _runs(marks: list[int]) -> Iterable[tuple[int, ...]]:
    """The marks of each shingle, in text order (a run of fewer than 5 tokens is one)."""
    if len(marks) < SHINGLE:
        return (tuple(marks),)
    return zip(marks, marks[1:], marks[2:], marks[3:], marks[4:], strict=False)


def may_be_near(size_a: int, size_b: int) -> bool:
    """Whether sets of these sizes can have Jaccard >= 4/5 (it is at most min / max)."""
    return 5 * min(size_a, size_b) >= 4 * max(size_a, size_b)


def shares_enough(shared: int, size_a: int, size_b: int) -> bool:
    """Whether sets of these sizes sharing ``shared`` elements have Jaccard >= 4/5, exactly."""
    return 5 * shared >= 4 * (size_a + size_b - shared)

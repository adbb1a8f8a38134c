"""The corpus loader (agent-context-api 7.4): each usable index read once from the log by the
position of its publication, with token counts from ``passage_features``, and kept in-process
(an index at a position never changes), least recently used first out past a bound in bytes,
and dropped once its index is no longer current (``retain``, by the corpus warmer). What packs
compute per record (signatures, postings, pack-engine/2's features) is computed here, once per
publication, and counted in the bound."""

from __future__ import annotations

import contextlib
import logging
import queue
import sys
import threading
import time
import weakref
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import Future, wait
from typing import NamedTuple

import msgspec
from eventsourcing.postgres import PostgresDatastore

from context_service.adapters.pack.hybrid_features import HybridFeatures, ModelPieces, PieceModel
from context_service.adapters.pack.lexical import LexicalIndex
from context_service.adapters.postgres.views.published import index_records, published_at
from context_service.domain.bounded import BoundedCache, Gauge, MiB, text_bytes
from context_service.domain.context.events import QueryIndexPublished, QueryRecord
from context_service.domain.pack.model import CollectionAt, CollectionCorpus, Corpus, TokenCount
from context_service.projections.pack_inputs.reads import CorpusLoading
from context_service.projections.passage_features.features import (
    IndexTexts,
    PublishedTexts,
    text_hash,
)

log = logging.getLogger(__name__)

LIMIT_BYTES = 3 * 1024 * MiB  # the corpus cache's bound: about 200,000 passages of the packs
# benchmark (about 16 KB each, measured), the count bound it replaced
# What a passage costs beyond its record's encoded bytes (the Passage and QueryRecord objects,
# their dictionary slots, a signature's tuple and arrays, the record counted twice for its
# Python objects): measured with tracemalloc on generated corpora, rounded up.
PASSAGE_OVERHEAD = 900
_encode = msgspec.json.Encoder().encode
PROCESS_MODEL = ModelPieces()  # the process's embedding model, loaded on first use
# loads behind callers with a deadline (on the loader's own thread), at most this many queued or
# under way: each is a distinct publication, so callers cannot queue more work than that
MAX_BACKGROUND = 4


class Ticket:
    """A load's place among those waiting for their turn; urgent when someone waits for it."""

    __slots__ = ("urgent",)

    def __init__(self, urgent: bool) -> None:
        self.urgent = urgent


class Turns:
    """One holder at a time, in the order they came, the urgent ones first (a load someone
    waits for goes before the warmer's next). A holder with a deadline goes on without its
    turn once the deadline has passed."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._busy = False
        self._waiting: list[Ticket] = []

    @contextlib.contextmanager
    def turn(self, ticket: Ticket, until: float | None = None) -> Iterator[bool]:
        """Hold the turn (True), or give up waiting for it at ``until`` (False)."""
        held = False
        with self._changed:
            self._waiting.append(ticket)
            try:
                held = self._busy = self._wait_for(ticket, until)
            finally:
                self._waiting.remove(ticket)
                self._changed.notify_all()  # the next in line is another one now
        try:
            yield held
        finally:
            if held:
                with self._changed:
                    self._busy = False
                    self._changed.notify_all()

    def _wait_for(self, ticket: Ticket, until: float | None) -> bool:
        while self._busy or self._next() is not ticket:
            if until is None:
                self._changed.wait()
            elif (left := until - time.monotonic()) <= 0:
                return False
            else:
                self._changed.wait(left)
        return True

    def _next(self) -> Ticket:
        return next((t for t in self._waiting if t.urgent), self._waiting[0])

    def promote(self, ticket: Ticket) -> None:
        """``ticket`` is waited for now (an asker joined the warmer's load)."""
        with self._changed:
            if not ticket.urgent:
                ticket.urgent = True
                self._changed.notify_all()


class Read(NamedTuple):
    """What a load reads of an index from the database."""

    revision: str
    records: Sequence[QueryRecord]
    tokens: TokenCount
    pieces: list[bytes | None]  # each passage's stored model pieces, where stored


class Cached:
    """A loaded index with what packs read of it, each computed once here: deduplication
    signatures, §7.5's postings, and pack-engine/2's features (stems, postings, bags,
    neighbours, pooled vectors)."""

    __slots__ = ("corpus", "hybrid", "lexical", "size")

    def __init__(self, corpus: CollectionCorpus, model: PieceModel | None = None,
                 pieces: Sequence[bytes | None] | None = None) -> None:
        """``pieces``: each passage's stored model pieces, where stored (``passage_features``)."""
        corpus.warm()  # deduplication signatures paid once at load, not by the first packs
        self.corpus = corpus
        self.lexical = LexicalIndex(corpus)
        self.hybrid = HybridFeatures(corpus, model or PROCESS_MODEL, pieces)
        self.size = corpus_bytes(corpus) + self.lexical.nbytes() + self.hybrid.nbytes()


def corpus_bytes(corpus: CollectionCorpus) -> int:
    """An estimate of what a loaded corpus holds: each record twice its encoded length plus a
    fixed overhead, its signature's keys and prefix, each document's text."""
    total = 0
    for p in corpus.passages:
        sig = corpus.signature(p.record.id)
        total += (PASSAGE_OVERHEAD + 2 * len(_encode(p.record)) + sys.getsizeof(sig.keys)
                  + sys.getsizeof(sig.prefix) + text_bytes(p.ref))
    return total + sum(text_bytes(d.text) + 200 for d in corpus.documents.values())


class CorpusLoader:
    """``CorpusReads``: ``count`` is used only for a text whose features are not stored yet
    (the features view behind the log); packs wait for that view, so normally never."""

    def __init__(self, datastore: PostgresDatastore, count: TokenCount,
                 limit_bytes: int = LIMIT_BYTES, model: PieceModel = PROCESS_MODEL) -> None:
        self.datastore = datastore
        self.count = count
        self.model = model
        self._cache: BoundedCache[int, Cached] = BoundedCache(
            "pack_corpus", limit_bytes, lambda _, c: c.size)
        self._lock = threading.Lock()
        self._oversized: set[int] = set()  # publications too large to keep: not warmed again
        # what each load computed, for as long as someone holds its corpus (the cache, a pack):
        # a pack reads the features its corpus's load computed, kept or not (an index too large
        # to keep, one evicted meanwhile), never computing them again (the values hold no
        # reference to the key)
        self._served: weakref.WeakKeyDictionary[
            CollectionCorpus, tuple[LexicalIndex, HybridFeatures]] = weakref.WeakKeyDictionary()
        self._flights: dict[int, Future[Cached]] = {}  # the loads under way, by publication
        self._tickets: dict[int, Ticket] = {}  # their places in the turns, by publication
        # the loads behind callers, for the loader's own thread (``_start_worker``)
        self._queue: queue.SimpleQueue[tuple[CollectionAt, Future[Cached]]] = queue.SimpleQueue()
        self._worker: threading.Thread | None = None
        self._background = 0  # loads behind callers, queued or under way (``cached``)
        # one load computes at a time, whoever leads it (the warmer, a request, a thread behind
        # a request): a load is Python holding the interpreter lock, so loads side by side
        # finish no sooner, and each one more makes every request of the process wait longer
        # for that lock (the query route's p95 during loads: bench_packs)
        self._computing = Turns()
        # the current indexes, as the warmer last said (``retain``), and the log position its
        # list was read at: an index in the list or published after that position is current,
        # and only a current one is loaded behind a caller with a deadline (the cache keeps it)
        self._current: frozenset[int] = frozenset()
        self._seen = sys.maxsize  # nothing said yet: no index is current
        self.loads = 0  # indexes read from the log (misses)

    def holds(self, publication: int) -> bool:
        return publication in self._cache

    def oversized(self, publication: int) -> bool:
        """Whether the index was loaded once and found larger than the whole bound."""
        with self._lock:
            return publication in self._oversized

    def has_room(self) -> bool:
        return self._cache.bytes < self._cache.limit

    def passages(self) -> int:
        return sum(len(c.corpus.passages) for c in self._held())

    def _held(self) -> list[Cached]:
        return self._cache.values()

    def corpus(self, collections: Sequence[CollectionAt],
               until: float | None = None) -> Corpus:
        usable = [c for c in collections if c.usable]
        held: dict[str, Cached] = {}
        if until is not None:  # every index loaded behind the caller starts before any wait
            for c in usable:
                with contextlib.suppress(CorpusLoading):
                    if isinstance(begun := self._begin(c, until, here=False), Cached):
                        held[c.name] = begun
        return {c.name: (held[c.name] if c.name in held else self.cached(c, until)).corpus
                for c in usable}

    def cached(self, collection: CollectionAt, until: float | None = None,
               warming: bool = False) -> Cached:
        """The index's loaded corpus. A miss loads it once however many ask at the same time:
        the first asker reads and computes, the others wait for its result (or its error)
        instead of each paying the same second or more of CPU (the warmer and the first packs
        after a publication, a burst of packs on a cold index).

        With ``until`` (a ``time.monotonic`` instant: where an agent route's read wait ends)
        the caller waits no longer: a load it would lead runs on the loader's own thread, and
        ``CorpusLoading`` is raised when the corpus is not there by then; the load goes on,
        and the cache keeps its result for the next try. That holds for current indexes that
        fit the bound; any other (an older position's, one found larger than the bound) is
        waited for as before, since the cache would not keep what a load behind the caller
        left. At most ``MAX_BACKGROUND`` loads are queued or under way behind callers; past
        that, a caller with a deadline that would start one is refused at once.

        One load computes at a time (``Turns``), in the order they came, those someone waits
        for first: ``warming`` (the warmer's own loads) goes after them, until another caller
        joins it, so an asker's index is loaded next rather than after every other current
        index."""
        found = self._begin(collection, until, warming=warming)
        if isinstance(found, Cached):
            return found
        assert found is not None  # ``here``: a load this caller is to lead is begun
        flight, leads = found
        if leads:
            return self._lead(collection, flight, until)
        if until is None:
            return flight.result()
        done, _ = wait([flight], timeout=max(0.0, until - time.monotonic()))
        if not done:
            raise CorpusLoading(collection.name)
        return flight.result()

    def _begin(self, collection: CollectionAt, until: float | None, here: bool = True,
               warming: bool = False) -> Cached | tuple[Future[Cached], bool] | None:
        """The held corpus, else the load under way and whether this caller is to lead it
        (a load behind a caller with a deadline is led by the loader's own thread:
        ``CorpusLoading`` past the bound). ``here=False``: start only a load behind the
        caller, never one the caller would lead (None then). A caller other than the warmer
        joining a load makes it urgent."""
        publication = collection.publication
        hit = self._cache.get(publication)
        if hit is not None:
            return hit
        with self._lock:
            flight = self._flights.get(publication)
            joined = self._tickets[publication] if flight is not None else None
            if flight is None:
                hit = self._cache.get(publication)  # a load ended since the miss above
                if hit is not None:
                    return hit
                if (until is None or publication in self._oversized
                        or not self._is_current(publication)):
                    if not here:
                        return None
                    flight = self._flights[publication] = Future()
                    self._tickets[publication] = Ticket(urgent=not warming)
                    return flight, True
                if self._background >= MAX_BACKGROUND:
                    raise CorpusLoading(collection.name)
                flight = self._flights[publication] = Future()
                self._tickets[publication] = Ticket(urgent=True)
                self._background += 1
        if joined is not None:
            assert flight is not None
            if not warming:
                self._computing.promote(joined)
            return flight, False
        try:
            self._start_worker()
        except BaseException as exc:  # no thread: nobody would ever end this flight
            with self._lock:
                del self._flights[publication]
                del self._tickets[publication]
                self._background -= 1
            flight.set_exception(exc)
            raise
        self._queue.put((collection, flight))
        return flight, False

    def _start_worker(self) -> None:
        """The loader's own thread for the loads behind callers, started on first use and
        kept. One thread made per load spread the loads' allocations over the allocator's
        per-thread arenas, and the process kept growing a little with every round of
        publications (``tests/e2e/test_memory_rounds.py``); the loads compute one at a time
        anyway (``Turns``)."""
        with self._lock:
            if self._worker is None or not self._worker.is_alive():
                worker = threading.Thread(target=self._serve_behind, name="corpus-load",
                                          daemon=True)
                worker.start()
                self._worker = worker

    def _serve_behind(self) -> None:
        while True:
            self._lead_behind(*self._queue.get())

    def _lead(self, collection: CollectionAt, flight: Future[Cached],
              until: float | None = None) -> Cached:
        """Load ``collection`` for every asker of ``flight`` (``until``: see ``_loaded``)."""
        try:
            kept = self._loaded(collection, self._tickets[collection.publication], until)
        except BaseException as exc:
            flight.set_exception(exc)
            raise
        else:
            flight.set_result(kept)
            return kept
        finally:
            with self._lock:
                del self._flights[collection.publication]
                del self._tickets[collection.publication]

    def _lead_behind(self, collection: CollectionAt, flight: Future[Cached]) -> None:
        """``_lead`` on the loader's own thread (for an asker with a deadline)."""
        try:
            self._lead(collection, flight)
        except Exception:  # the askers have it from the flight; the next ask loads again
            log.warning("a corpus load failed", extra={"collection": collection.name},
                        exc_info=True)
        finally:
            with self._lock:
                self._background -= 1

    def _loaded(self, collection: CollectionAt, ticket: Ticket,
                until: float | None) -> Cached:
        """Read the index, then compute its corpus in its turn (``Turns``); a caller leading
        the load itself with a deadline (an older position's index, one too large to keep)
        computes without its turn once the deadline has passed, as before turns: it is not
        refused, and would not be kept for a later try."""
        read = self._load(collection)  # the database: no turn needed
        with self._computing.turn(ticket, until):
            loaded = self._build(collection, read)
        with self._lock:
            self.loads += 1
            if loaded.size > self._cache.limit:  # served, never kept
                if collection.publication not in self._oversized:
                    log.warning(
                        "index too large for the pack corpus cache: every pack over it loads"
                        " it again (raise CS_PACK_CACHE_MIB to keep it)",
                        extra={"collection": collection.name,
                               "publication": collection.publication,
                               "passages": len(loaded.corpus.passages),
                               "mib": round(loaded.size / MiB, 1),
                               "limit_mib": round(self._cache.limit / MiB, 1)})
                self._oversized.add(collection.publication)
            self._served[loaded.corpus] = (loaded.lexical, loaded.hybrid)
        return self._cache.keep(collection.publication, loaded)

    def lexical(self, corpus: CollectionCorpus) -> LexicalIndex:
        served = self._computed(corpus)
        return served[0] if served is not None else LexicalIndex(corpus)

    def hybrid(self, corpus: CollectionCorpus) -> HybridFeatures:
        served = self._computed(corpus)
        return served[1] if served is not None else HybridFeatures(corpus, self.model)

    def _computed(self, corpus: CollectionCorpus) -> tuple[LexicalIndex, HybridFeatures] | None:
        """What the load of ``corpus`` computed (kept in the cache or not), if it loaded it."""
        with self._lock:
            return self._served.get(corpus)

    def retain(self, publications: Iterable[int], seen: int | None = None) -> int:
        """Drop the corpora of indexes no longer current (deleted contexts, replaced indexes);
        how many were dropped. ``seen``: the log position the list was read at (an index
        published after it counts as current until a list says otherwise; None: none does)."""
        with self._lock:
            self._current = frozenset(publications)
            self._seen = sys.maxsize if seen is None else seen
            self._oversized = {p for p in self._oversized if self._is_current(p)}
        return self._cache.retain(lambda publication, _: self._is_current(publication))

    def _is_current(self, publication: int) -> bool:
        return publication in self._current or publication > self._seen

    def gauges(self) -> list[Gauge]:
        return self._cache.gauges()

    def _load(self, collection: CollectionAt) -> Read:
        """The index's records, their token counts and each passage's stored pieces."""
        with self.datastore.transaction(commit=False) as cur:
            recorded = published_at(cur, collection.publication)
            if recorded is None or recorded.stream.key != collection.name:
                raise LookupError(f"no index of {collection.name!r} published at "
                                  f"{collection.publication}")
            assert isinstance(recorded.event, QueryIndexPublished)
            records = index_records(cur, recorded)
            texts = PublishedTexts().add_index(collection.name, records)
            tokens, pieces = self._features(cur, collection.name, texts)
        return Read(recorded.event.revision, records, tokens,
                    [pieces.get(texts.embedded[ord_]) for ord_, _ in texts.passages])

    def _build(self, collection: CollectionAt, read: Read) -> Cached:
        """What packs read of the index, computed (Python holding the interpreter's lock)."""
        corpus = CollectionCorpus(collection.name, read.revision, collection.publication,
                                  read.records, read.tokens)
        return Cached(corpus, self.model, read.pieces)

    def _features(self, cur: object, collection: str,
                  texts: IndexTexts) -> tuple[TokenCount, dict[bytes, bytes]]:
        """The token count of each text, and the stored pieces of the embedded texts."""
        counted, embedded = list(texts.texts.counted), texts.texts.embedded
        cur.execute("SELECT hash, tokens, pieces FROM passage_features WHERE hash = ANY(%b)",  # type: ignore[attr-defined]
                    (counted + [h for h in embedded if h not in texts.texts.counted],),
                    binary=True)
        counts, pieces = {}, {}
        for row in cur.fetchall():  # type: ignore[attr-defined]
            key = bytes(row["hash"])
            counts[key] = row["tokens"]
            if row["pieces"] and key in embedded:  # empty: stored as not fitting 16 bits
                pieces[key] = bytes(row["pieces"])
        if any(h not in counts for h in counted):
            log.warning("token counts computed for texts without stored features",
                        extra={"collection": collection,
                               "texts": sum(h not in counts for h in counted)})

        def tokens(text: str) -> int:
            key = text_hash(text)
            found = counts.get(key)
            if found is None:
                found = counts[key] = self.count(text)
            return found

        return tokens, pieces

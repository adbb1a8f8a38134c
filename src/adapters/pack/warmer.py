"""Keeps the corpus cache warm: loads every current usable index (``agent_collections``) that
the cache lacks, and its vector matrix, at start and after each publication, so the first pack
after a publication does not pay for reading and laying out the index; drops the corpora,
matrices and scan layouts of indexes no longer current (a deleted context, a replaced index)
at every pass, so what a caller published and deleted again leaves nothing behind."""

from __future__ import annotations

import gc
import logging
import threading
import time

from context_service.adapters.pack.corpus import CorpusLoader
from context_service.adapters.pack.vector_matrix import VectorMatrices
from context_service.adapters.pack.vector_scan import Layout
from context_service.domain.bounded import Gauge
from context_service.domain.pack.model import CollectionAt
from context_service.domain.pack.text import token_ids, token_table_gauges

log = logging.getLogger(__name__)
VIEW = "agent_data"  # the projection writing ``agent_collections``
# A freeze keeps whatever is alive out of the cyclic collector's sight, not only the corpora:
# what an in-flight request held then and later left in a reference cycle is never collected.
# So once the frozen objects have grown by this share since the last whole-heap collection,
# the heap is unfrozen and collected whole (as the collector's own oldest generation waits for
# a quarter more): the garbage frozen stays under that share of what lives, and the cost of
# a whole pass is spread over as many objects frozen.
WHOLE_PASS_GROWTH = 0.25


class CorpusWarmer:
    def __init__(self, loader: CorpusLoader, interval: float = 2.0,
                 matrices: VectorMatrices | None = None,
                 tracking_table: str = "projection_tracking") -> None:
        self.loader = loader
        self.tracking_table = tracking_table  # the views' positions (the projection runner's)
        self.matrices = matrices
        self.interval = interval
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._frozen_at = 0  # the loader's loads when objects were last frozen
        self._frozen_whole = gc.get_freeze_count()  # frozen after the last whole collection
        self.dropped = 0  # indexes the last pass dropped from the caches
        self.complete = False  # at the last pass, every current index was held whole

    def current(self) -> tuple[list[CollectionAt], int]:
        """The current usable indexes, newest first, and a log position their view had reached
        when they were read (read first: a view moving on in between makes the list newer,
        never older, than the position)."""
        with self.loader.datastore.transaction(commit=False) as cur:
            cur.execute(f"SELECT max(notification_id) AS seen FROM {self.tracking_table}"
                        " WHERE application_name = %s", (VIEW,))
            row = cur.fetchone()
            seen = (row["seen"] if row is not None else None) or 0
            cur.execute("SELECT name, type, current_revision, index_revision, publication"
                        " FROM agent_collections WHERE usable ORDER BY publication DESC")
            return [CollectionAt(name=r["name"], live=True, type=r["type"],
                                 current_revision=r["current_revision"],
                                 index_revision=r["index_revision"],
                                 publication=r["publication"]) for r in cur.fetchall()], seen

    def warm(self) -> int:
        """Load the current indexes not cached yet, newest first, while the cache has room
        (and their matrices, while that cache has room); return how many indexes were
        loaded."""
        loaded = 0
        current, seen = self.current()
        publications = [c.publication for c in current]
        self.dropped = self.loader.retain(publications, seen)
        if self.matrices is not None:
            self.dropped += self.matrices.retain(publications)
        Layout.retain(publications)
        for collection in current:
            if self._stop.is_set() or not self.loader.has_room():
                break
            if not (self.loader.holds(collection.publication)
                    or self.loader.oversized(collection.publication)):
                self.loader.cached(collection, warming=True)  # after any load asked for
                loaded += 1
            matrices = self.matrices
            if (matrices is not None and matrices.has_room()
                    and matrices.get(collection.publication) is None
                    and not matrices.oversized(collection.publication)):
                matrices.load(collection.publication)
        self.complete = all(
            self.loader.holds(c.publication)
            and (self.matrices is None or self.matrices.get(c.publication) is not None)
            for c in current)
        return loaded

    def gauges(self) -> list[tuple[str, str, dict[str, str], float]]:
        """What the pack caches hold (scrape-time gauges)."""
        held = self.matrices.held() if self.matrices is not None else (0, 0)
        return [
            ("cs_pack_corpus_passages", "Passages of the indexes the corpus cache holds.", {},
             self.loader.passages()),
            ("cs_pack_matrix_rows", "Vectors the in-process matrices hold.", {}, held[1]),
            ("cs_pack_matrix_indexes", "Indexes whose vectors the matrices hold.", {},
             held[0]),
            ("cs_pack_cache_complete", "1 when the last warming pass found every current index"
             " held whole (corpus and vectors), else 0.", {}, 1 if self.complete else 0),
            ("cs_pack_exact_cosine", "1 when the server's cosine distance is the in-process"
             " model's, so scans of held matrices need no database, else 0.", {},
             1 if self.matrices is not None and self.matrices.exact else 0),
            ("cs_pack_token_ids", "Distinct tokens with an id for near-duplicate keys (the"
             " current token table, bounded in bytes).", {}, token_ids())]

    def cache_gauges(self) -> list[Gauge]:
        """Entries and estimated bytes of the corpus, matrix and layout caches and of the
        token table."""
        matrices = self.matrices.gauges() if self.matrices is not None else []
        return [*self.loader.gauges(), *matrices, *Layout.gauges(), *token_table_gauges()]

    def start(self) -> CorpusWarmer:
        self._thread = threading.Thread(target=self._run, name="corpus-warmer", daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.is_set():
            self.step()
            self._stop.wait(self.interval)

    def step(self) -> None:
        """One pass: load what is missing, then freeze the objects of any corpus loaded since
        the last freeze."""
        started = time.monotonic()
        try:
            loaded = self.warm()
        except Exception:  # the database may be restarting; try again later
            log.warning("corpus warming failed", exc_info=True)
            loaded = 0
        if loaded or self.loader.loads != self._frozen_at:
            # a loaded corpus lives until its publication is replaced: keep its objects out of
            # the cyclic collector's full passes (whoever loaded it: the first pack after a
            # publication may load an index before this thread does). Cyclic garbage frozen
            # would never be collected: collect first (a pass over the objects not frozen yet).
            # A corpus holds no cycle, so one dropped later is freed by its reference counts.
            self._freeze()
            self._frozen_at = self.loader.loads
        if loaded:
            log.info("corpus cache warmed", extra={
                "indexes": loaded, "seconds": round(time.monotonic() - started, 3)})

    def _freeze(self) -> None:
        """Collect, then freeze what lives; the whole heap is collected once the frozen
        objects have grown by ``WHOLE_PASS_GROWTH`` since it last was."""
        whole = gc.get_freeze_count() > self._frozen_whole * (1 + WHOLE_PASS_GROWTH)
        if whole:
            gc.unfreeze()
        gc.collect()
        gc.freeze()
        if whole:
            self._frozen_whole = gc.get_freeze_count()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)

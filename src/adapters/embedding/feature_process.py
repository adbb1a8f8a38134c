"""``TextFeatures`` computed in a child process with the model loaded there once: the features
of a publication are tokenised and embedded outside this process's interpreter lock, so the
runner's own work (reading records, hashing, storing) and the query index's threads do not wait
for them, nor they for those. Same code, same model: the features are the same bits.

One child per process, started on first use (spawned, so it inherits no threads or
connections), ended with the process: stopped at exit, and ending itself when its parent dies
however it dies (it waits on the parent's sentinel). Like the other children it leaves SIGINT
to its parent: a terminal's Ctrl-C reaches the whole group, and the service stops it in order."""

from __future__ import annotations

import atexit
import contextlib
import logging
import multiprocessing
import multiprocessing.connection
import os
import signal
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import TypeVar

from context_service.adapters.embedding.wordllama_model import TextFeaturesModel
from context_service.projections.passage_features.features import Feature, Text

log = logging.getLogger(__name__)
T = TypeVar("T")

_model: TextFeaturesModel | None = None  # the child's
_INTERRUPT = {signal.SIGINT}


@contextlib.contextmanager
def _interrupt_blocked() -> Iterator[None]:
    """A child starts with the signal mask of the thread that starts it: started inside, it
    holds a Ctrl-C back until it has chosen to ignore it. Only the calling thread's mask
    changes (the pool starts its child inside ``submit``), so this process's own handling is
    untouched; from the main thread a signal would wait the few milliseconds of the start."""
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, _INTERRUPT)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def _start_child() -> None:
    """In the child: ignore Ctrl-C (the parent stops it), and end with the parent, whatever
    ends it."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _INTERRUPT)
    parent = multiprocessing.parent_process()
    if parent is not None:
        sentinel = parent.sentinel

        def watch() -> None:
            multiprocessing.connection.wait([sentinel])
            os._exit(0)

        threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def _features(texts: list[Text]) -> list[Feature]:
    global _model
    if _model is None:
        _model = TextFeaturesModel()
    return _model.features(texts)


class FeatureProcess:
    """``TextFeatures`` in the child; in this process when the child cannot run."""

    _lock = threading.Lock()
    _pool: ProcessPoolExecutor | None = None

    def __init__(self, here: TextFeaturesModel) -> None:
        self.here = here

    def features(self, texts: Sequence[Text]) -> list[Feature]:
        try:
            return self._submit(_features, list(texts)).result()
        except BrokenProcessPool:
            log.warning("the feature process ended; computing features in this process")
            self._end(wait=False)
            return self.here.features(texts)

    @classmethod
    def _submit(cls, fn: Callable[..., T], *args: object) -> Future[T]:
        with _interrupt_blocked():  # the pool may start its child here
            return cls._child().submit(fn, *args)

    @classmethod
    def _child(cls) -> ProcessPoolExecutor:
        with cls._lock:
            if cls._pool is None:
                cls._pool = ProcessPoolExecutor(
                    1, mp_context=multiprocessing.get_context("spawn"),
                    initializer=_start_child)
                atexit.register(cls.stop)
            return cls._pool

    @classmethod
    def child_pid(cls) -> int:
        """The child's pid (started if it was not running)."""
        return cls._submit(os.getpid).result()

    @classmethod
    def stop(cls) -> None:
        """End the child (at exit; a later use starts a new one)."""
        cls._end(wait=True)

    @classmethod
    def _end(cls, wait: bool) -> None:
        with cls._lock:
            pool, cls._pool = cls._pool, None
        if pool is not None:
            pool.shutdown(wait=wait, cancel_futures=True)

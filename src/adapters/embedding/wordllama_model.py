"""Token counts and embeddings of texts (agent-context-api 7.5, 7.6) with ``wordllama``'s
``l2_supercat`` model at 256 dimensions, read from the installed package's own files.

The files are read as the library reads them (the tokenizer with ``tokenizers``, the matrix's
``embedding.weight`` with ``safetensors``) without importing the library itself: its import
(pydantic, requests, its configuration models) was half of a load's time, at every start of the
service and of its feature child. ``test_embedding`` checks both against ``WordLlama.load``.

The embedding of a text is the mean of its tokens' rows of the model's embedding matrix (no
special tokens, no truncation), scaled to unit length; a text without tokens has none. Loaded
once per process, on first use.

The matrix's values lie on a grid of 2**-24 (they are float16 numbers), so a float64 sum of
their rows is exact in any order while short enough (``Embedder.exact_up_to``): each distinct
token's row is then weighted by its count, in one matrix-vector product, with the same result
as adding the rows one by one.
"""

from __future__ import annotations

import importlib.util
import os
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from context_service.adapters.embedding import piece_counts
from context_service.adapters.embedding.pieces import LIMIT_BYTES, WordPieces, tokenizer_spec
from context_service.domain.bounded import Gauge, cache_gauges
from context_service.projections.passage_features.features import Feature, Text

CONFIG = "l2_supercat"
DIM = 256
# where the package keeps them, as ``WordLlama.load(config=CONFIG, dim=DIM)`` finds them
WEIGHTS = os.path.join("weights", f"{CONFIG}_{DIM}.safetensors")
TENSOR = "embedding.weight"
TOKENIZER = os.path.join("tokenizers", f"{CONFIG}_tokenizer_config.json")
UNAVAILABLE = f"wordllama model {CONFIG} ({DIM}) is not available offline"

Vector = npt.NDArray[np.float32]


class ModelUnavailable(RuntimeError):
    """The model's files are not installed; nothing is ever downloaded instead."""


class Embedder:
    """The tokenizer and embedding matrix of the model (thread-safe: both are read-only)."""

    def __init__(self, tokenizer: Any, matrix: npt.NDArray[np.float32]) -> None:
        self._tokenizer = tokenizer
        self._matrix = matrix
        self.exact_up_to = exact_sums_up_to(matrix)
        # the word-by-word tokenizer is made on the first text (about 0.3 s: a process that
        # never tokenizes, as most starts of the service in a test run, never pays for it)
        self._word_pieces: WordPieces | None = None
        self._decided = False
        self._deciding = threading.Lock()

    @property
    def _pieces(self) -> WordPieces | None:
        """The word-by-word tokenizer, or None where its ids would differ from the model's."""
        if not self._decided:
            with self._deciding:
                if not self._decided:
                    spec = tokenizer_spec(self._tokenizer)
                    if WordPieces.applies(spec):
                        self._word_pieces = WordPieces(self._tokenizer, spec)
                    self._decided = True
        return self._word_pieces

    @property
    def matrix(self) -> npt.NDArray[np.float32]:
        """The embedding rows, by piece id (read-only)."""
        return self._matrix

    def token_ids(self, texts: Sequence[str]) -> list[list[int]]:
        if not texts:
            return []
        pieces = self._pieces
        if pieces is not None:
            return pieces.ids(texts)
        return self.full_token_ids(texts)

    def full_token_ids(self, texts: Sequence[str]) -> list[list[int]]:
        """The tokenizer's own ids (the reference the word-by-word ids equal)."""
        encoded = self._tokenizer.encode_batch(list(texts), add_special_tokens=False)
        return [list(e.ids) for e in encoded]

    def count(self, text: str) -> int:
        return len(self.token_ids([text])[0])

    def cache_gauges(self) -> list[Gauge]:
        """The word-ids cache: words held, their estimated bytes and its bound."""
        pieces = self._word_pieces  # not made for a scrape: none yet holds nothing
        if pieces is None:  # not made yet, or the full tokenizer: no word cache
            return cache_gauges("word_ids", 0, 0, LIMIT_BYTES)
        return cache_gauges("word_ids", *pieces.held(), pieces.limit)

    def counts(self, texts: Sequence[str]) -> list[int]:
        pieces = self._pieces
        if pieces is not None:
            return pieces.counts(texts)
        return [len(ids) for ids in self.token_ids(texts)]

    def features(self, texts: Sequence[Text]) -> list[Feature]:
        """Token counts, and vectors of the texts to embed (as ``vector_bytes``)."""
        if not texts:
            return []
        results: list[npt.NDArray[np.int32] | int]
        pieces = self._pieces
        if pieces is not None:
            results = pieces.joined(texts)
        else:
            full = self.full_token_ids([t.text for t in texts])
            results = [np.asarray(ids, dtype=np.int32) if t.embed else len(ids)
                       for t, ids in zip(texts, full, strict=True)]
        out = []
        for r in results:
            if isinstance(r, int):
                out.append(Feature(r, None))
            else:
                vector, held = self.embed_with_pieces(r)
                out.append(Feature(len(r), vector_bytes(vector), held))
        return out

    def embed(self, text: str) -> Vector | None:
        return self.embed_ids(self.token_ids([text])[0])

    def embed_ids(self, ids: Sequence[int] | npt.NDArray[np.int32]) -> Vector | None:
        """Mean of the tokens' vectors (in float64), scaled to unit length, as float32."""
        return self.embed_with_pieces(ids)[0]

    def embed_with_pieces(self, ids: Sequence[int] | npt.NDArray[np.int32],
                          ) -> tuple[Vector | None, bytes | None]:
        """``embed_ids``, and the text's distinct pieces with their counts as
        ``piece_counts`` stores them (what pack-engine/2 pools at load)."""
        if not len(ids):
            return None, None
        index = ids if isinstance(ids, np.ndarray) else np.fromiter(ids, np.intp, len(ids))
        distinct, counts = piece_counts.distinct(index)
        if len(index) <= self.exact_up_to:
            # every partial sum is exact: the distinct rows weighted by their counts
            total = counts.astype(np.float64) @ self._matrix[distinct].astype(np.float64)
        else:
            total = self._matrix[index].sum(axis=0, dtype=np.float64)
        return self._unit_mean(total, len(ids)), piece_counts.encode(distinct, counts)

    @staticmethod
    def _unit_mean(total: npt.NDArray[np.float64], n: int) -> Vector | None:
        mean = total / n
        norm = float(np.linalg.norm(mean))
        if norm == 0.0:
            return None
        unit: Vector = (mean / norm).astype(np.float32)
        return unit


def exact_sums_up_to(matrix: npt.NDArray[np.float32]) -> int:
    """How many rows of ``matrix`` a float64 sum (or a count-weighted one) adds without any
    rounding, in any order: when every value is an integer multiple of 2**-24 of at most
    ``k`` such units, the sums of up to ``2**53 // k`` of them are exact (0: not on the grid)."""
    # scaling by a power of two rounds nothing, so float32 holds the units exactly (no float64
    # copy of the matrix); an infinity would have overflowed and is refused
    with np.errstate(over="ignore"):
        units = matrix * np.float32(2.0**24)
    if not (np.isfinite(units).all() and np.array_equal(units, np.floor(units))):
        return 0
    largest = int(np.abs(units).max(initial=0.0))
    return 2**53 // largest if largest else 2**53


_lock = threading.Lock()
_loaded: Embedder | None = None


def load(cache_dir: str | None = None) -> Embedder:
    """The process's model, loaded on first call; ``ModelUnavailable`` when its files are
    missing (``cache_dir`` defaults to the installed package's folder)."""
    global _loaded
    with _lock:
        if _loaded is None or cache_dir is not None:
            embedder = _load(cache_dir)
            if cache_dir is not None:
                return embedder
            _loaded = embedder
        return _loaded


def model_folder() -> str:
    """The installed ``wordllama`` package's folder, found without importing it."""
    found = importlib.util.find_spec("wordllama")
    if found is None or not found.submodule_search_locations:
        raise ModelUnavailable(UNAVAILABLE)
    return str(next(iter(found.submodule_search_locations)))


def _load(cache_dir: str | None) -> Embedder:
    folder = cache_dir or model_folder()
    try:
        from safetensors import safe_open
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_file(os.path.join(folder, TOKENIZER))
        with safe_open(os.path.join(folder, WEIGHTS), framework="np", device="cpu") as weights:
            matrix = np.ascontiguousarray(weights.get_tensor(TENSOR), dtype=np.float32)
    except Exception as error:  # a missing or unreadable file: nothing is downloaded instead
        raise ModelUnavailable(UNAVAILABLE) from error
    if matrix.ndim != 2 or matrix.shape[1] != DIM:
        raise ModelUnavailable(UNAVAILABLE)
    # Counts and vectors need neither padding nor truncation.
    tokenizer.no_padding()
    tokenizer.no_truncation()
    return Embedder(tokenizer, matrix)


def gauges() -> list[Gauge]:
    """The loaded model's cache gauges (empty ones before it is loaded: a scrape never loads
    it)."""
    loaded = _loaded
    if loaded is None:
        return cache_gauges("word_ids", 0, 0, LIMIT_BYTES)
    return loaded.cache_gauges()


def vector_bytes(vector: Vector | None) -> bytes | None:
    """The vector as 256 big-endian float32 (how views store and send it)."""
    return None if vector is None else vector.astype(">f4").tobytes()


class TextFeaturesModel:
    """``TextFeatures`` over the process's model (loaded on first use)."""

    def __init__(self, embedder: Embedder | None = None) -> None:
        self._embedder = embedder

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            self._embedder = load()
        return self._embedder

    def counts(self, texts: Sequence[str]) -> list[int]:
        return self.embedder.counts(texts)

    def features(self, texts: Sequence[Text]) -> list[Feature]:
        return self.embedder.features(texts)

"""How an embedded text's model pieces are stored beside its vector (``passage_features.pieces``):
its distinct piece ids in ascending order, each with its count, as big-endian unsigned 16-bit
pairs (4 bytes a distinct piece). pack-engine/2 pools a record's vector from them with its
collection's piece weights (rule 6), so a corpus load reads them instead of tokenizing again.

A text with an id or a count that does not fit 16 bits (a vocabulary of more than 65,536
pieces, a piece repeated more than 65,535 times) stores an empty value: known, so not
computed again at its next publication, and tokenized at load."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

PAIR = np.dtype(">u2")
LIMIT = np.iinfo(np.uint16).max
Ints = npt.NDArray[np.int64]


def distinct(ids: npt.ArrayLike) -> tuple[Ints, Ints]:
    """A text's distinct pieces (ascending) and how many times each occurs."""
    pieces, counts = np.unique(np.asarray(ids, dtype=np.int64), return_counts=True)
    return pieces, counts


def encode(pieces: npt.NDArray[Any], counts: npt.NDArray[Any]) -> bytes:
    """``pieces`` (distinct, ascending) with their ``counts``; empty when one does not fit or
    there are none."""
    if not len(pieces) or int(pieces[-1]) > LIMIT or int(counts.max()) > LIMIT:
        return b""
    pairs = np.empty((len(pieces), 2), dtype=PAIR)
    pairs[:, 0] = pieces
    pairs[:, 1] = counts
    return pairs.tobytes()


def decode(stored: bytes) -> tuple[Ints, Ints]:
    """The pieces and their counts of ``encode``'s bytes."""
    pairs = np.frombuffer(stored, dtype=PAIR).reshape(-1, 2).astype(np.int64)
    return pairs[:, 0], pairs[:, 1]

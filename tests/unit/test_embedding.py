"""The embedding model, offline: token counts of the spec's examples, unit-length and
deterministic embeddings equal to the mean of the token vectors, and the offline error."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from context_service.adapters.embedding import piece_counts
from context_service.adapters.embedding.wordllama_model import (
    UNAVAILABLE,
    Embedder,
    ModelUnavailable,
    TextFeaturesModel,
    exact_sums_up_to,
    load,
    vector_bytes,
)
from context_service.projections.passage_features.features import Text
from tests.support.fresh import loaded_packages
from tests.support.hypothesis_profiles import scaled


def test_token_counts_follow_the_llama_tokenizer() -> None:
    model = load()
    assert model.count("Who is the current CFO, and since when?") == 11
    assert model.count("") == 0
    assert model.counts(["Who is the current CFO, and since when?", "", "CFO"]) == [
        11, 0, model.count("CFO")]


def test_embedding_is_the_unit_mean_of_the_token_vectors() -> None:
    model = load()
    text = "Anna Berg became CFO on 1 March 2025."
    vector = model.embed(text)
    assert vector is not None and vector.shape == (256,) and vector.dtype == np.float32
    assert abs(float(np.linalg.norm(vector.astype(np.float64))) - 1.0) < 1e-6
    ids = model.token_ids([text])[0]
    mean = model._matrix[ids].astype(np.float64).mean(axis=0)
    assert np.allclose(vector, mean / np.linalg.norm(mean), atol=1e-7)
    assert np.array_equal(model.embed(text), vector)  # deterministic
    assert model.embed("") is None  # no tokens, no vector


def test_features_pair_counts_with_big_endian_vectors() -> None:
    features = TextFeaturesModel().features([Text(("CFO appointment",), embed=True),
                                             Text(("CFO", "appointment"), "\n\n")])
    assert features[0].tokens == load().count("CFO appointment")
    assert features[0].vector is not None and len(features[0].vector) == 256 * 4
    restored = np.frombuffer(features[0].vector, dtype=">f4")
    assert np.array_equal(restored, load().embed("CFO appointment"))
    assert features[1] == (load().count("CFO\n\nappointment"), None, None)
    # the embedded text's distinct pieces with their counts, as the corpus loader reads them
    assert features[0].pieces is not None
    pieces, counts = piece_counts.decode(features[0].pieces)
    ids = load().token_ids(["CFO appointment"])[0]
    assert pieces.tolist() == sorted(set(ids))
    assert counts.tolist() == [ids.count(p) for p in pieces.tolist()]


def test_pieces_that_do_not_fit_sixteen_bits_are_not_stored() -> None:
    # stored empty: known (not computed again), tokenized at load
    assert piece_counts.encode(np.array([3, 70_000]), np.array([1, 1])) == b""
    assert piece_counts.encode(np.array([3, 9]), np.array([1, 65_536])) == b""
    assert piece_counts.encode(np.array([], dtype=np.int64), np.array([], dtype=np.int64)) == b""
    kept = piece_counts.encode(np.array([3, 65_535]), np.array([65_535, 2]))
    assert kept == bytes([0, 3, 255, 255, 255, 255, 0, 2])  # big-endian pairs
    assert [a.tolist() for a in piece_counts.decode(kept)] == [[3, 65_535], [65_535, 2]]


_PIECE = st.text(alphabet=st.sampled_from(list("ab Z9 .,\n\t▁<s>é东😀")), max_size=30)


@settings(max_examples=scaled(300), deadline=None)
@given(parts=st.lists(_PIECE, min_size=1, max_size=5), separator=st.sampled_from(
    ["", "\n", "\n\n", " ", "▁"]), embed=st.booleans())
def test_word_by_word_ids_equal_the_tokenizers(parts: list[str], separator: str,
                                               embed: bool) -> None:
    model = load()
    text = Text(tuple(parts), separator, embed)
    full = model.full_token_ids([text.text])[0]
    assert model.token_ids([text.text])[0] == full
    assert model.count(text.text) == len(full)
    (feature,) = model.features([text])
    assert feature.tokens == len(full)
    if embed and full:
        assert feature.vector == vector_bytes(model.embed_ids(full))


def test_long_texts_are_neither_truncated_nor_padded() -> None:
    model = load()
    text = " ".join(f"word{i}" for i in range(3000))
    assert model.count(text) == len(model.full_token_ids([text])[0]) > 3000
    assert model.counts(["a", text]) == [model.count("a"), model.count(text)]


def test_missing_model_files_are_reported_not_downloaded(tmp_path: object) -> None:
    with pytest.raises(ModelUnavailable, match=r"^wordllama model l2_supercat \(256\) is not"
                                               r" available offline$"):
        load(str(tmp_path))
    assert UNAVAILABLE == "wordllama model l2_supercat (256) is not available offline"


def _spec_vector(model: object, text: str) -> bytes | None:
    """The spec's definition computed here: the float64 mean of the rows of the tokenizer's
    own ids, scaled to unit length, as big-endian float32."""
    ids = model.full_token_ids([text])[0]  # type: ignore[attr-defined]
    if not ids:
        return None
    mean = model._matrix[ids].sum(axis=0, dtype=np.float64) / len(ids)  # type: ignore[attr-defined]
    return (mean / np.linalg.norm(mean)).astype(np.float32).astype(">f4").tobytes()


def test_batched_features_equal_the_definition_on_long_texts() -> None:
    """Many long texts at once (titles, records and documents sharing parts): counts equal the
    tokenizer's and vectors equal the definition bit for bit."""
    import random

    rng = random.Random(11)
    words = ["".join(rng.choices("abcdefghijklmnoprstuvwyé", k=rng.randint(2, 11)))
             for _ in range(3000)]
    records = [". ".join(" ".join(rng.choices(words, k=12)).capitalize()
                         for _ in range(rng.randint(1, 40))) for _ in range(60)]
    titles = [" ".join(rng.choices(words, k=rng.randint(1, 6))).title() for _ in records]
    texts = [Text((t, r), "\n", embed=True) for t, r in zip(titles, records, strict=True)]
    texts += [Text((r,), embed=True) for r in records[:20]]
    texts += [Text(tuple(records[i:i + 5]), "\n\n") for i in range(0, 60, 5)]
    model = load()
    features = model.features(texts)
    for text, feature in zip(texts, features, strict=True):
        assert feature.tokens == len(model.full_token_ids([text.text])[0])
        assert feature.vector == (_spec_vector(model, text.text) if text.embed else None)


def test_count_weighted_sums_only_where_they_are_exact() -> None:
    """The model's matrix holds float16 values: sums of its rows are exact for texts of up to
    about 67 million tokens. Off that grid, rows are added in order, as the definition says."""
    model = load()
    assert model.exact_up_to == exact_sums_up_to(model._matrix) > 60_000_000
    assert exact_sums_up_to(np.array([[0.1, 0.5]], dtype=np.float32)) == 0
    assert exact_sums_up_to(np.array([[2.0**-24, -8.0]], dtype=np.float32)) == 2**53 // 2**27
    # on the grid, but too large for any sum to be exact (its units overflow float32)
    assert exact_sums_up_to(np.array([[3e38, 1.0]], dtype=np.float32)) == 0
    rng = np.random.default_rng(3)
    matrix = rng.standard_normal(model._matrix.shape).astype(np.float32)
    other = Embedder(model._tokenizer, matrix)
    assert other.exact_up_to == 0
    ids = model.token_ids(["Anna Berg became CFO on 1 March 2025, and the board agreed."])[0]
    total = np.zeros(256, dtype=np.float64)
    for row in matrix[ids]:
        total += row
    mean = total / len(ids)
    vector = other.embed_ids(ids)
    assert vector is not None
    assert np.array_equal(vector, (mean / np.linalg.norm(mean)).astype(np.float32))


def test_the_files_read_are_the_librarys_model() -> None:
    """Read without the library, the matrix and the tokenizer are what ``WordLlama.load``
    gives (the same floats; the same tokenizer, serialised, once both drop padding)."""
    import os

    import wordllama
    from wordllama import WordLlama

    from context_service.adapters.embedding.wordllama_model import CONFIG, DIM

    library = WordLlama.load(config=CONFIG, dim=DIM, disable_download=True,
                             cache_dir=os.path.dirname(wordllama.__file__))
    model = load()
    assert np.array_equal(np.asarray(library.embedding, dtype=np.float32), model._matrix)
    library.tokenizer.no_padding()
    library.tokenizer.no_truncation()
    assert library.tokenizer.to_str() == model._tokenizer.to_str()


def test_loading_the_model_does_not_import_the_library() -> None:
    probe = loaded_packages(
        "from context_service.adapters.embedding.wordllama_model import load\n"
        "result = load().count('Who is the current CFO?')", ("wordllama", "pydantic"))
    assert (probe.result, probe.imported) == ("7", [])


def test_the_word_by_word_tokenizer_is_made_once_on_the_first_text() -> None:
    """A scrape of the gauges does not make it; threads asking at once share one."""
    from concurrent.futures import ThreadPoolExecutor

    model = load()
    fresh = Embedder(model._tokenizer, model._matrix)
    assert fresh._word_pieces is None
    assert [g[3] for g in fresh.cache_gauges()][:2] == [0, 0]
    assert fresh._word_pieces is None
    text = "Who is the current CFO, and since when?"
    with ThreadPoolExecutor(4) as pool:
        counts = list(pool.map(lambda _: fresh.count(text), range(8)))
    assert counts == [11] * 8
    made = fresh._word_pieces
    assert made is not None and fresh._pieces is made
    assert fresh.cache_gauges()[0][3] > 0

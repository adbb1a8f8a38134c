"""Exact, faster token ids for the Llama-2 tokenizer of ``l2_supercat``, word by word.

The tokenizer normalises a text to ``"▁" + text.replace(" ", "▁")`` and runs BPE over the whole
string. When no vocabulary piece holds a ``▁`` after another character, no merge crosses the
start of a ``▁``-led word, so the ids of the text are the concatenation of the ids of its words
(runs of ``▁`` with what follows them); with every byte token present, no unknown token is
fused across words either. Words repeat, so their ids are cached: a text costs one split and
a few dictionary look-ups. ``WordPieces.applies`` checks these properties on the loaded files;
a text holding a special token's literal (``<s>``) goes through the full tokenizer.

Each word's ids are cached packed (native int32 bytes): a text's ids are one ``bytes.join``
away from an array, and its count is a sum of lengths. The cache is bounded in estimated bytes
(``LIMIT_BYTES``): a full one is replaced by one holding the words in use.

A text joined from parts (``Text``) is not split again: with a separator of neither spaces nor
``▁``, the words of ``a + sep + b`` are those of ``a`` and of ``b``, except that the last word
of ``a``, the separator and the first word of ``b`` (without the ``▁`` the text's start gets)
run together; a part led by a space starts a word of its own.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterable, Sequence
from itertools import pairwise
from typing import Any

import numpy as np
import numpy.typing as npt

from context_service.projections.passage_features.features import Text

_WORD = re.compile("▁*[^▁]+|▁+")
_NORMALIZER = {"type": "Sequence", "normalizers": [
    {"type": "Prepend", "prepend": "▁"},
    {"type": "Replace", "pattern": {"String": " "}, "content": "▁"}]}
LIMIT_BYTES = 64 << 20
# a cached word's dictionary slot (with the table's spare room) beyond its key and value
WORD_OVERHEAD = 100
_NEW_IDS = 45  # the packed ids of a word not encoded yet, as a guess (one to three ids)
_ID = np.dtype(np.int32)
Ids = npt.NDArray[np.int32]
_Plan = list[str | tuple[str, int, int]]  # a joined text's words: runs of parts, and joints


def _packed(ids: Sequence[int]) -> bytes:
    return np.asarray(ids, dtype=_ID).tobytes()


def _count(packed: bytes) -> int:
    return len(packed) // _ID.itemsize


def _entry(word: str, packed: bytes) -> int:
    return sys.getsizeof(word) + sys.getsizeof(packed) + WORD_OVERHEAD


def _new(words: Iterable[str]) -> int:
    """The estimated bytes of caching ``words``, before their ids are known."""
    return sum(sys.getsizeof(w) + _NEW_IDS + WORD_OVERHEAD for w in words)


def tokenizer_spec(tokenizer: Any) -> tuple[str, dict[str, Any]]:
    """The tokenizer's serialised form and its parsed JSON (about 1.2 MB: made once per load,
    for both ``WordPieces.applies`` and ``WordPieces``)."""
    text: str = tokenizer.to_str()
    spec: dict[str, Any] = json.loads(text)
    return text, spec


class WordPieces:
    def __init__(self, tokenizer: Any, spec: tuple[str, dict[str, Any]]) -> None:
        """``spec``: the tokenizer's ``tokenizer_spec``."""
        from tokenizers import Tokenizer

        self._full = tokenizer
        text, parsed = spec
        bare = Tokenizer.from_str(text)
        bare.normalizer = None
        bare.pre_tokenizer = None
        bare.no_padding()
        bare.no_truncation()
        self._bare = bare
        self._specials = tuple(t["content"] for t in parsed.get("added_tokens", ()))
        literals = sorted((s for s in self._specials if s), key=len, reverse=True)
        # one scan of the text for any of them (None: the tokenizer has none)
        self._special = re.compile("|".join(map(re.escape, literals))) if literals else None
        self._cache: dict[str, bytes] = {}  # word -> its ids, packed
        self._bytes = 0  # the cache's estimated bytes
        self.limit = LIMIT_BYTES

    @staticmethod
    def applies(spec: tuple[str, dict[str, Any]]) -> bool:
        """Whether the word-by-word ids equal those of the tokenizer of ``spec``
        (``tokenizer_spec``) for every text."""
        parsed = spec[1]
        model = parsed.get("model", {})
        vocab: dict[str, int] = model.get("vocab", {})
        bytes_present = all(f"<0x{b:02X}>" in vocab for b in range(256))
        no_crossing = not any("▁" in piece.lstrip("▁") for piece in vocab)
        return (parsed.get("normalizer") == _NORMALIZER and parsed.get("pre_tokenizer") is None
                and model.get("type") == "BPE" and model.get("byte_fallback") is True
                and model.get("dropout") is None and bytes_present and no_crossing)

    def _split(self, texts: Sequence[str], fill: bool = True,
               ) -> tuple[list[list[str] | None], dict[str, bytes]]:
        """Each text's words (None: through the full tokenizer), and a cache holding the ids
        of all of them (a full cache is replaced, never emptied under another thread); with
        ``fill`` false, the caller caches the words it finds missing (``_fill``)."""
        split: list[list[str] | None] = []
        missing: dict[str, None] = {}
        cache = self._cache
        for text in texts:
            if self._holds_special(text):
                split.append(None)
                continue
            words = _WORD.findall("▁" + text.replace(" ", "▁")) if text else []
            split.append(words)
            if fill and not all(map(cache.__contains__, words)):  # cached, as a rule
                missing.update(dict.fromkeys(w for w in words if w not in cache))
        if missing:
            if self._bytes + _new(missing) > self.limit:
                cache = self._replace({w: cache[w] for words in split if words for w in words
                                       if w in cache})
            self._split_words(list(missing), cache)
        return split, cache

    def _replace(self, kept: dict[str, bytes]) -> dict[str, bytes]:
        """A full cache replaced by ``kept`` (never emptied under another thread)."""
        self._cache = kept
        self._bytes = sum(_entry(w, ids) for w, ids in kept.items())
        return kept

    def held(self) -> tuple[int, int]:
        """The words cached and their estimated bytes."""
        return len(self._cache), self._bytes

    def ids(self, texts: Sequence[str]) -> list[list[int]]:
        split, cache = self._split(texts)
        return [list(self._full.encode(text, add_special_tokens=False).ids) if words is None
                else np.frombuffer(b"".join(map(cache.__getitem__, words)), _ID).tolist()
                for text, words in zip(texts, split, strict=True)]

    def counts(self, texts: Sequence[str]) -> list[int]:
        split, cache = self._split(texts)
        return [len(self._full.encode(text, add_special_tokens=False).ids) if words is None
                else _count(b"".join(map(cache.__getitem__, words)))
                for text, words in zip(texts, split, strict=True)]

    def joined(self, texts: Sequence[Text]) -> list[Ids | int]:
        """For each text, its ids (int32) when it is to be embedded, else its token count.

        Words are looked up as they are joined; a text meeting a word not cached yet is laid
        out again once the words missing from all such texts are encoded, in one batch."""
        parts = list({p: None for t in texts for p in t.parts})
        split, cache = self._split(parts)
        words = dict(zip(parts, split, strict=True))
        plans = [self._plan(text, words) for text in texts]
        joints = sorted({w for plan in plans if plan is not None for w in plan
                         if isinstance(w, str) and w not in cache})
        if joints:  # the words formed where parts meet: new to the cache as a rule
            self._split_words(joints, cache)
        out: list[Ids | int] = [0] * len(texts)
        spans: dict[tuple[str, int, int], int] = {}  # bytes of a run of a part's packed ids
        # texts to embed first: the runs they join give the counts of the texts sharing them
        order = sorted(range(len(texts)), key=lambda i: not texts[i].embed)
        retry = self._lay(texts, plans, words, cache, spans, order, out)
        if retry:
            needed = [ws for i in retry for p in texts[i].parts if (ws := words[p])]
            needed += [[w for w in plan if isinstance(w, str)]
                       for i in retry if (plan := plans[i]) is not None]
            cache = self._fill(needed)
            left = self._lay(texts, plans, words, cache, spans, retry, out)
            assert not left, "every word was cached"
        return out

    def _lay(self, texts: Sequence[Text], plans: list[_Plan | None],
             words: dict[str, list[str] | None], cache: dict[str, bytes],
             spans: dict[tuple[str, int, int], int], order: list[int],
             out: list[Ids | int]) -> list[int]:
        """Fill ``out`` for the texts of ``order``; the texts meeting an uncached word."""
        retry = []
        for i in order:
            text, plan = texts[i], plans[i]
            try:
                if plan is None:
                    whole = self.ids([text.text])[0]
                    out[i] = np.asarray(whole, dtype=_ID) if text.embed else len(whole)
                elif text.embed:
                    out[i] = np.frombuffer(self._joined_ids(plan, words, cache, spans), _ID)
                else:
                    size = 0
                    for w in plan:
                        size += len(cache[w]) if isinstance(w, str) else self._span(
                            w, words, cache, spans)
                    out[i] = size // _ID.itemsize
            except KeyError:
                retry.append(i)
        return retry

    @staticmethod
    def _joined_ids(plan: _Plan, words: dict[str, list[str] | None], cache: dict[str, bytes],
                    spans: dict[tuple[str, int, int], int]) -> bytes:
        chunks: list[bytes] = []
        for w in plan:
            if isinstance(w, str):
                chunks.append(cache[w])
            else:
                run = words[w[0]]
                assert run is not None
                chunk = b"".join(map(cache.__getitem__, run[w[1]:w[2]]))
                spans[w] = len(chunk)
                chunks.append(chunk)
        return b"".join(chunks)

    def _fill(self, needed: list[list[str]]) -> dict[str, bytes]:
        """Cache the uncached words of ``needed`` (a full cache is replaced by one holding
        the words of ``needed``, never emptied under another thread)."""
        cache = self._cache
        missing = {w for ws in needed for w in ws if w not in cache}
        if self._bytes + _new(missing) > self.limit:
            cache = self._replace({w: cache[w] for ws in needed for w in ws if w in cache})
        if missing:
            self._split_words(sorted(missing), cache)
        return cache

    @staticmethod
    def _span(run: tuple[str, int, int], words: dict[str, list[str] | None],
              cache: dict[str, bytes], spans: dict[tuple[str, int, int], int]) -> int:
        """Bytes of the packed ids of a run of a part's words: known, or one first word away
        from a known run ending at the same word, else summed."""
        size = spans.get(run)
        if size is not None:
            return size
        part, lo, hi = run
        ws = words[part]
        assert ws is not None
        other = spans.get((part, 1 - lo, hi)) if lo in (0, 1) and hi >= 1 else None
        if other is not None:
            first = len(cache[ws[0]])
            size = other + first if lo == 0 else other - first
        else:
            size = sum(map(len, map(cache.__getitem__, ws[lo:hi])))
        spans[run] = size
        return size

    def _plan(self, text: Text, words: dict[str, list[str] | None]) -> _Plan | None:
        """The words of the joined text as runs of its parts' words, ``(part, lo, hi)``, and
        the words formed where parts meet (None: split the joined text itself)."""
        sep = text.separator
        if " " in sep or "▁" in sep or self._special_across(text):
            return None
        first = text.parts[0]
        ws = words[first]
        if ws is None or not first.strip(" ▁"):
            return None
        plan: _Plan = [(first, 0, len(ws) - 1)]
        pending = ws[-1]  # the last word so far, which the next part may extend
        for part in text.parts[1:]:
            following = words[part]
            if following is None or not part.strip(" ▁"):
                return None
            head = pending + sep
            if part[0] in " ▁" and head.strip("▁"):  # the part's first word starts anew
                plan.append(head)
                start = following[0][1:]
            else:
                start = head + following[0][1:]
            if len(following) == 1:
                pending = start
                continue
            plan.extend((start, (part, 1, len(following) - 1)))
            pending = following[-1]
        plan.append(pending)
        return plan

    def _special_across(self, text: Text) -> bool:
        """Whether a special token's literal spans where parts meet (one inside a part sends
        the part, and so the text, through the full tokenizer anyway)."""
        if len(text.parts) < 2 or not self._specials:
            return False
        reach = max(map(len, self._specials)) - 1
        if any(len(p) < reach for p in text.parts):
            return self._holds_special(text.text)
        sep = text.separator
        return any(self._holds_special(a[len(a) - reach:] + sep + b[:reach])
                   for a, b in pairwise(text.parts))

    def _holds_special(self, text: str) -> bool:
        """Whether a special token's literal occurs in ``text``."""
        return self._special is not None and self._special.search(text) is not None

    def _split_words(self, words: list[str], cache: dict[str, bytes]) -> None:
        """Cache the ids of ``words`` (already split; encoded as they are, in one batch: the
        tokenizer releases the GIL)."""
        encoded = self._bare.encode_batch(words, add_special_tokens=False)
        added = 0
        for word, enc in zip(words, encoded, strict=True):
            packed = cache[word] = _packed(enc.ids)
            added += _entry(word, packed)
        if cache is self._cache:
            self._bytes += added

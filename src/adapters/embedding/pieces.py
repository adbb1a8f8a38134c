"""Exact, faster token ids for the Llama-2 tokenizer of ``l2_supercat``, word by word.

The tokenizer normalises a text to ``"▁" + text.replace(" ", "▁")`` and runs BPE over the whole
string. When no vocabulary piece holds a ``▁`` after another character, no merge crosses the
start of a ``▁``-led word, so the ids of the text are the concatenation of the ids of its words
(runs of ``▁`` with what follows them); with every byte token present, no unknown token is
fused across words either. Words repeat, so their ids are cached: a text costs one split and
a few dictionary look-ups. ``WordPieces.applies`` checks these properties on the loaded files;
a text holding a special token's literal (``<s>``) goes through the full tokenizer.

Each word's ids are cached packed (native int32 bytes): a text's ids are one ``bytes.join``
away from an array, and its count is a sum of lengths.

A text joined from parts (``Text``) is not split again: with a separator of neither spaces nor
``▁``, the words of ``a + sep + b`` are those of ``a`` and of ``b``, except that the last word
of ``a``, the separator and the first word of ``b`` (without the ``▁`` the text's start gets)
run together; a part led by a space starts a word of its own.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from context_service.projections.passage_features.features import Text

_WORD = re.compile("▁*[^▁]+|▁+")
_NORMALIZER = {"type": "Sequence", "normalizers": [
    {"type": "Prepend", "prepend": "▁"},
    {"type": "Replace", "pattern": {"String": " "}, "content": "▁"}]}
_CACHE_LIMIT = 1_000_000
_ID = np.dtype(np.int32)
Ids = npt.NDArray[np.int32]


def _packed(ids: Sequence[int]) -> bytes:
    return np.asarray(ids, dtype=_ID).tobytes()


def _count(packed: bytes) -> int:
    return len(packed) // _ID.itemsize


class WordPieces:
    def __init__(self, tokenizer: Any) -> None:
        from tokenizers import Tokenizer

        self._full = tokenizer
        bare = Tokenizer.from_str(tokenizer.to_str())
        bare.normalizer = None
        bare.pre_tokenizer = None
        bare.no_padding()
        bare.no_truncation()
        self._bare = bare
        spec = json.loads(tokenizer.to_str())
        self._specials = tuple(t["content"] for t in spec.get("added_tokens", ()))
        self._cache: dict[str, bytes] = {}  # word -> its ids, packed

    @staticmethod
    def applies(tokenizer: Any) -> bool:
        """Whether the word-by-word ids equal the tokenizer's for every text."""
        spec = json.loads(tokenizer.to_str())
        model = spec.get("model", {})
        vocab: dict[str, int] = model.get("vocab", {})
        bytes_present = all(f"<0x{b:02X}>" in vocab for b in range(256))
        no_crossing = not any("▁" in piece.lstrip("▁") for piece in vocab)
        return (spec.get("normalizer") == _NORMALIZER and spec.get("pre_tokenizer") is None
                and model.get("type") == "BPE" and model.get("byte_fallback") is True
                and model.get("dropout") is None and bytes_present and no_crossing)

    def _split(self, texts: Sequence[str],
               ) -> tuple[list[list[str] | None], dict[str, bytes]]:
        """Each text's words (None: through the full tokenizer), and a cache holding the ids
        of all of them (a full cache is replaced, never emptied under another thread)."""
        split: list[list[str] | None] = []
        missing: dict[str, None] = {}
        cache = self._cache
        for text in texts:
            if any(s in text for s in self._specials):
                split.append(None)
                continue
            words = _WORD.findall("▁" + text.replace(" ", "▁")) if text else []
            split.append(words)
            missing.update(dict.fromkeys(set(words).difference(cache)))
        if missing:
            if len(cache) + len(missing) > _CACHE_LIMIT:
                kept = {w: cache[w] for words in split if words for w in words if w in cache}
                cache = self._cache = kept
            self._split_words(list(missing), cache)
        return split, cache

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
        """For each text, its ids (int32) when it is to be embedded, else its token count."""
        parts = list({p: None for t in texts for p in t.parts})
        split, cache = self._split(parts)
        words = dict(zip(parts, split, strict=True))
        plans = [self._plan(text, words) for text in texts]
        joints = sorted({w for plan in plans if plan is not None for w in plan
                         if isinstance(w, str) and w not in cache})
        if joints:
            self._split_words(joints, cache)
        totals: dict[str, int] = {}  # bytes of a part's packed ids
        out: list[Ids | int] = []
        for text, plan in zip(texts, plans, strict=True):
            if plan is None:
                whole = self.ids([text.text])[0]
                out.append(np.asarray(whole, dtype=_ID) if text.embed else len(whole))
            elif text.embed:
                chunks: list[bytes] = []
                for w in plan:
                    if isinstance(w, str):
                        chunks.append(cache[w])
                    else:
                        run = words[w[0]]
                        assert run is not None
                        chunks.append(b"".join(map(cache.__getitem__, run[w[1]:w[2]])))
                out.append(np.frombuffer(b"".join(chunks), _ID))
            else:
                size = 0
                for w in plan:
                    if isinstance(w, str):
                        size += len(cache[w])
                        continue
                    part, lo, hi = w
                    ws = words[part]
                    assert ws is not None
                    if part not in totals:
                        totals[part] = sum(map(len, map(cache.__getitem__, ws)))
                    size += (totals[part] - (len(cache[ws[0]]) if lo else 0)
                             - (len(cache[ws[-1]]) if hi < len(ws) else 0))
                out.append(size // _ID.itemsize)
        return out

    def _plan(self, text: Text, words: dict[str, list[str] | None],
              ) -> list[str | tuple[str, int, int]] | None:
        """The words of the joined text as runs of its parts' words, ``(part, lo, hi)``, and
        the words formed where parts meet (None: split the joined text itself)."""
        sep = text.separator
        if " " in sep or "▁" in sep or any(s in text.text for s in self._specials):
            return None
        first = text.parts[0]
        ws = words[first]
        if ws is None or not first.strip(" ▁"):
            return None
        plan: list[str | tuple[str, int, int]] = [(first, 0, len(ws) - 1)]
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

    def _split_words(self, words: list[str], cache: dict[str, bytes]) -> None:
        """Cache the ids of ``words`` (already split; encoded as they are, in one batch: the
        tokenizer releases the GIL)."""
        encoded = self._bare.encode_batch(words, add_special_tokens=False)
        for word, enc in zip(words, encoded, strict=True):
            cache[word] = _packed(enc.ids)

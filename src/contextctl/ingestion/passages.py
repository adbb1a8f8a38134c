"""Passages from a document's blocks: the blocks of one section are packed, in order, into
passages of at most ``max_tokens`` tokens; a block too long for one passage is cut at sentences
(prose) or lines (code, tables), and a sentence or line still too long at token boundaries.

A passage's id names its place: ``<file>#<anchor>:<n>``, the n-th passage of the section with
that anchor (``<file>#<n>`` before the first heading), so it stays the same from one run to the
next while the file and that section do not change."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import groupby

from context_service.contextctl.ingestion.blocks import LINES, Block, Document
from context_service.contextctl.ingestion.meter import Done, unreported
from context_service.contextctl.ingestion.tokens import Running, TokenCounter

TITLE_SEPARATOR = " \u203a "  # a single right-pointing angle quotation mark
BLOCK_SEPARATOR = "\n\n"
_SENTENCE_END = re.compile(r"(?<=[.!?…。])\s+")


@dataclass(frozen=True, slots=True)
class Passage:
    id: str
    title: str
    text: str
    tokens: int
    file: str
    valid_from: str | None = None


def record_id(file: str, anchor: str, number: int) -> str:
    return f"{file}#{anchor}:{number}" if anchor else f"{file}#{number}"


def passages(document: Document, file: str, counter: TokenCounter, max_tokens: int,
             done: Done = unreported) -> list[Passage]:
    """``done`` hears, at each passage, how many characters of the blocks are cut (about:
    blank lines join blocks, white space between pieces is dropped)."""
    found: list[Passage] = []
    numbers: dict[str, int] = {}
    total, cut = sum(len(b.text) for b in document.blocks), 0
    for block, text, tokens in _packed(document.blocks, counter, max_tokens):
        cut += len(text)
        done(cut, total)
        numbers[block.anchor] = numbers.get(block.anchor, 0) + 1
        title = TITLE_SEPARATOR.join(block.heading) or document.title
        # the id names the place in the file; ``file`` the document (one conversation of a file
        # holding several), whose records alone are each other's neighbours in a pack
        found.append(Passage(record_id(file, block.anchor, numbers[block.anchor]), title, text,
                             tokens, f"{file}#{block.part}" if block.part else file,
                             block.valid_from))
    return found


def _section(block: Block) -> object:
    return id(block) if block.alone else (block.anchor, block.heading)


def _packed(blocks: list[Block], counter: TokenCounter,
            most: int) -> Iterator[tuple[Block, str, int]]:
    """(the first block of the passage, its text, its tokens) in document order."""
    for _, grouped in groupby(blocks, key=_section):
        section = list(grouped)
        counts = counter.counts([b.text for b in section])
        run: list[Block] = []
        for block, count in zip(section, counts, strict=True):
            if count > most:
                yield from _flush(run, counter, most)
                run = []
                separator = "\n" if block.cut == LINES else " "
                for _, text, tokens in _greedy(_pieces(block, counter, most), separator,
                                               counter, most):
                    yield block, text, tokens
            else:
                run.append(block)
        yield from _flush(run, counter, most)


def _flush(run: list[Block], counter: TokenCounter,
           most: int) -> Iterator[tuple[Block, str, int]]:
    for first, text, tokens in _greedy([b.text for b in run], BLOCK_SEPARATOR, counter, most):
        yield run[first], text, tokens


def _greedy(units: list[str], separator: str, counter: TokenCounter,
            most: int) -> Iterator[tuple[int, str, int]]:
    """Consecutive units joined while the whole stays within ``most`` tokens: (the index of
    the first unit, the text, its tokens). The joined text's count grows from its last word
    (``TokenCounter.grown``), so a long run of small units is not counted again at each unit."""
    start = 0
    run = Running(0, "")
    for index, unit in enumerate(units):
        if index > start:
            grown = counter.grown(run, separator + unit)
            if grown is None:  # counted whole (a special token's literal)
                grown = counter.running(separator.join(units[start:index + 1]))
            if grown.tokens <= most:
                run = grown
                continue
            yield start, separator.join(units[start:index]), run.tokens
        start, run = index, counter.running(unit)
    if start < len(units):
        yield start, separator.join(units[start:]), run.tokens


def _pieces(block: Block, counter: TokenCounter, most: int) -> list[str]:
    """The block cut into pieces of at most ``most`` tokens each."""
    first = block.text.split("\n") if block.cut == LINES else _SENTENCE_END.split(block.text)
    pieces: list[str] = []
    for piece, count in zip(first, counter.counts(first), strict=True):
        if count > most:
            pieces.extend(counter.windows(piece, most))
        elif piece.strip():
            pieces.append(piece)
    return pieces

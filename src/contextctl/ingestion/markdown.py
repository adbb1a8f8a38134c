"""Markdown (CommonMark with tables, parsed by ``markdown-it-py``): headings make the heading
path; every other top-level block — a paragraph, each item of a list, a code block, a table, a
quote — is one block, kept as its Markdown source. YAML front matter is left out.

A parse holds some 45 bytes of tokens per byte of Markdown, so a large file is parsed a slice at
a time (at least ``SLICE`` characters), cut only before a heading at the margin after a blank
line, where every block before has ended: the blocks are those of one parse, in bounded memory."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.token import Token

from context_service.contextctl.ingestion.blocks import LINES, PROSE, Document, Outline
from context_service.contextctl.ingestion.decoding import Unreadable
from context_service.contextctl.ingestion.meter import Done, unreported

_FRONT_MATTER = re.compile(r"\A---[ \t]*\n((?:.*\n)*?)(?:---|\.\.\.)[ \t]*(?:\n|\Z)")
# a line of YAML front matter: a key, a list item, an indented continuation or a comment (a
# file opening with a thematic break ``---`` and holding prose before a later one has none)
_YAML_LINE = re.compile(r"[^\s:#\-][^:]*:(?:[ \t]|$)|-(?:[ \t]|$)|[ \t]|#")
_NEWLINES = re.compile(r"\r\n?")
_LINE_CUT = frozenset({"fence", "code_block", "table_open", "html_block"})
# levels of nesting read (a list and its item are two): markdown-it's CommonMark preset stops at
# 20 and skips the rest of the text from there, and within a list item "the rest" is the whole
# file: an outline 10 lists deep made everything after it, later headings too, one list item.
# Its default preset's 100 reads lists 49 deep; a file with a deeper one is refused, never folded
# silently (a quote too deep skips only the rest of that quote, whose source is its block anyway)
NESTING = 100
_parser = MarkdownIt("commonmark", {"maxNesting": NESTING}).enable("table")
# the block structure alone (no inline tokens): where a slice may end, and the link references
_blocks = MarkdownIt("commonmark", {"maxNesting": NESTING}).enable("table")
_blocks.core.ruler.enableOnly(["normalize", "block"])
SLICE = 1 << 18  # characters parsed at once, at least: some 12 MB of tokens
_HEADING = re.compile(r"#{1,6}(?:[ \t]|$)")
# a list is ended by a heading at the margin whatever its items hold (an open fence, say)
_LISTS = frozenset({"bullet_list_open", "ordered_list_open"})


def _is_yaml(block: str) -> bool:
    """Whether the lines between the two ``---`` read as YAML front matter."""
    return all(_YAML_LINE.match(line) for line in block.split("\n") if line.strip())


def parse(text: str, name: str, done: Done = unreported) -> Document:
    text = _NEWLINES.sub("\n", text)  # as markdown-it reads lines: \r\n and \r end lines too
    front = _FRONT_MATTER.match(text)
    if front and _is_yaml(front.group(1)):  # blank lines in its place keep the lines' numbers
        text = "\n" * front.group(0).count("\n") + text[front.end():]
    lines = text.split("\n")  # not splitlines: U+2028, form feeds and others are not line ends
    document = Document(name)
    outline = Outline()
    for first, tokens in _slices(lines, done):
        for index, token in enumerate(tokens):
            if token.type == "list_item_open" and token.level + 1 >= NESTING:
                raise Unreadable("nested too deeply to read")  # the rest of the file was skipped
            if token.type == "heading_open" and token.level == 0:
                title = _plain(tokens[index + 1])
                if title:
                    outline.heading(int(token.tag[1:]), title)
            elif _is_block(token, tokens):
                source = _source(lines, token, first)
                if source:
                    cut = LINES if token.type in _LINE_CUT else PROSE
                    document.blocks.append(outline.block(source, cut))
    return document


def _slices(lines: list[str], done: Done) -> Iterator[tuple[int, list[Token]]]:
    """(the number of its first line, the tokens) of each slice of the document, in order. The
    link references of the whole document are read first, with the cuts: a heading may use one
    defined further down (a changelog's ``## [1.0.0]``), as one parse would resolve it.
    ``done`` hears of each cut found and each slice parsed, by lines (each is read twice)."""
    env: dict[str, Any] = {}
    total = 2 * len(lines)
    cuts: list[int] = []
    for cut in _cuts(lines, env):
        cuts.append(cut)
        done(cut, total)
    for start, end in zip([0, *cuts], [*cuts, len(lines)], strict=True):
        last = end == len(lines)
        yield start, _parser.parse("\n".join(lines[start:end]) + ("" if last else "\n"), env)
        done(len(lines) + end, total)


def _cuts(lines: list[str], env: dict[str, Any]) -> Iterator[int]:
    """The first line of each slice after the first, from the block structure alone (which
    notes the link references in ``env``). A cut where a block stays open (a fence or an HTML
    comment that has not ended) is not made; the next is tried twice as far, so that no text is
    parsed more than about three times."""
    start, size, wanted = 0, 0, SLICE
    for number in range(1, len(lines)):
        size += len(lines[number - 1]) + 1
        if size < wanted or not _may_cut(lines, number):
            continue
        # the candidate ends with its blank line
        if _ended(_blocks.parse("\n".join(lines[start:number]) + "\n", env), number - start):
            yield number
            start, size, wanted = number, 0, SLICE
        else:
            wanted = 2 * size
    _blocks.parse("\n".join(lines[start:]), env)  # the last slice's references


def _may_cut(lines: list[str], number: int) -> bool:
    """Whether line ``number`` is a heading at the margin after a blank line, which ends any
    paragraph, list, quote, table or indented code before it."""
    return not lines[number - 1].strip() and _HEADING.match(lines[number]) is not None


def _ended(tokens: list[Token], count: int) -> bool:
    """Whether the last top-level block of a slice of ``count`` lines (the last one blank)
    ended before the slice did: a fence or an HTML block left open runs to its end."""
    last = next((t for t in reversed(tokens) if t.level == 0 and t.map is not None), None)
    return last is None or last.map is None or last.map[1] < count or last.type in _LISTS


def _is_block(token: Token, tokens: list[Token]) -> bool:
    """A top-level block other than a heading or a list, or an item of a top-level list."""
    if token.map is None or token.nesting == -1:
        return False
    if token.level == 0:
        return token.type not in ("heading_open", "bullet_list_open", "ordered_list_open", "hr")
    return token.level == 1 and token.type == "list_item_open"


def _source(lines: list[str], token: Token, first: int) -> str:
    assert token.map is not None
    start, end = token.map
    return "\n".join(lines[first + start:first + end]).strip("\n").rstrip()


def _plain(inline: Token) -> str:
    """A heading's text without its Markdown markup."""
    parts = [child.content if child.type in ("text", "code_inline") else " "
             for child in inline.children or [] if child.type in (
                 "text", "code_inline", "softbreak", "hardbreak")]
    return " ".join("".join(parts).split())

"""Markdown (CommonMark with tables, parsed by ``markdown-it-py``): headings make the heading
path; every other top-level block — a paragraph, each item of a list, a code block, a table, a
quote — is one block, kept as its Markdown source. YAML front matter is left out."""

from __future__ import annotations

import re

from markdown_it import MarkdownIt
from markdown_it.token import Token

from context_service.contextctl.ingestion.blocks import LINES, PROSE, Document, Outline

_FRONT_MATTER = re.compile(r"\A---[ \t]*\n((?:.*\n)*?)(?:---|\.\.\.)[ \t]*(?:\n|\Z)")
# a line of YAML front matter: a key, a list item, an indented continuation or a comment (a
# file opening with a thematic break ``---`` and holding prose before a later one has none)
_YAML_LINE = re.compile(r"[^\s:#\-][^:]*:(?:[ \t]|$)|-(?:[ \t]|$)|[ \t]|#")
_NEWLINES = re.compile(r"\r\n?")
_LINE_CUT = frozenset({"fence", "code_block", "table_open", "html_block"})
_parser = MarkdownIt("commonmark").enable("table")


def _is_yaml(block: str) -> bool:
    """Whether the lines between the two ``---`` read as YAML front matter."""
    return all(_YAML_LINE.match(line) for line in block.split("\n") if line.strip())


def parse(text: str, name: str) -> Document:
    text = _NEWLINES.sub("\n", text)  # as markdown-it reads lines: \r\n and \r end lines too
    front = _FRONT_MATTER.match(text)
    if front and _is_yaml(front.group(1)):  # blank lines in its place keep the lines' numbers
        text = "\n" * front.group(0).count("\n") + text[front.end():]
    lines = text.split("\n")  # not splitlines: U+2028, form feeds and others are not line ends
    document = Document(name)
    outline = Outline()
    tokens = _parser.parse(text)
    for index, token in enumerate(tokens):
        if token.type == "heading_open" and token.level == 0:
            title = _plain(tokens[index + 1])
            if title:
                outline.heading(int(token.tag[1:]), title)
        elif _is_block(token, tokens):
            source = _source(lines, token)
            if source:
                cut = LINES if token.type in _LINE_CUT else PROSE
                document.blocks.append(outline.block(source, cut))
    return document


def _is_block(token: Token, tokens: list[Token]) -> bool:
    """A top-level block other than a heading or a list, or an item of a top-level list."""
    if token.map is None or token.nesting == -1:
        return False
    if token.level == 0:
        return token.type not in ("heading_open", "bullet_list_open", "ordered_list_open", "hr")
    return token.level == 1 and token.type == "list_item_open"


def _source(lines: list[str], token: Token) -> str:
    assert token.map is not None
    start, end = token.map
    return "\n".join(lines[start:end]).strip("\n").rstrip()


def _plain(inline: Token) -> str:
    """A heading's text without its Markdown markup."""
    parts = [child.content if child.type in ("text", "code_inline") else " "
             for child in inline.children or [] if child.type in (
                 "text", "code_inline", "softbreak", "hardbreak")]
    return " ".join("".join(parts).split())

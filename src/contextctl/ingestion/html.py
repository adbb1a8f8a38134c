"""HTML (parsed by ``selectolax``'s Lexbor engine): ``h1`` to ``h6`` make the heading path;
paragraphs, list items, table rows, preformatted text, quotes and definitions are blocks of their
visible text. Scripts, styles, navigation, elements marked ``hidden`` or ``aria-hidden="true"``
and other invisible parts are left out; the page's ``<title>`` is the document's title."""

from __future__ import annotations

import re
from typing import Any

from selectolax.lexbor import LexborHTMLParser

from context_service.contextctl.ingestion.blocks import LINES, Document, Outline

HEADINGS = {f"h{n}": n for n in range(1, 7)}
SKIPPED = frozenset({"script", "style", "noscript", "template", "nav", "svg", "canvas", "iframe",
                     "head", "button", "select", "-comment"})
LEAVES = frozenset({"p", "li", "pre", "blockquote", "dt", "dd", "tr", "figcaption", "caption",
                    "address", "summary"})
INLINE = frozenset({"a", "abbr", "b", "bdi", "bdo", "cite", "code", "data", "dfn", "em", "i",
                    "kbd", "mark", "q", "s", "samp", "small", "span", "strong", "sub", "sup",
                    "time", "u", "var", "del", "ins", "label", "font", "img", "wbr"})
CELLS = frozenset({"td", "th"})
_SPACES = re.compile(r"[ \t\r\f\v\u00a0]+")


def parse(text: str, name: str) -> Document:
    tree = LexborHTMLParser(text)
    title_node = tree.css_first("title")
    title = clean(title_node.text()) if title_node is not None else ""
    document = Document(title or name)
    root = tree.body or tree.root
    if root is not None:
        _Walker(document).walk(root)
    return document


def clean(text: str) -> str:
    """Runs of spaces made one, blank lines and spaces around lines dropped."""
    lines = (_SPACES.sub(" ", line).strip() for line in text.split("\n"))
    return "\n".join(line for line in lines if line)


class _Walker:
    def __init__(self, document: Document) -> None:
        self.document = document
        self.outline = Outline()
        self.pending: list[str] = []

    def walk(self, node: Any) -> None:
        for child in node.iter(include_text=True):
            tag = child.tag
            if _invisible(child):
                continue
            if tag == "-text" or tag in INLINE or tag == "br":
                self.pending.append(_text(child))
            elif tag in HEADINGS:
                self.flush()
                heading = " ".join(_text(child).split())
                if heading:
                    self.outline.heading(HEADINGS[tag], heading)
            elif tag in LEAVES:
                self.flush()
                self.add(_text(child).strip("\n") if tag == "pre" else clean(_text(child)),
                         LINES if tag == "pre" else "prose")
            else:  # a container: its blocks are found inside it
                self.flush()
                self.walk(child)
        self.flush()

    def flush(self) -> None:
        self.add(clean("".join(self.pending)))
        self.pending.clear()

    def add(self, text: str, cut: str = "prose") -> None:
        if text.strip():
            self.document.blocks.append(self.outline.block(text, cut))


def _text(node: Any) -> str:
    """The visible text of a node: line breaks around blocks, ``|`` between table cells."""
    if node.tag == "-text":
        return str(node.text(deep=False))
    if node.tag == "br":
        return "\n"
    parts: list[str] = []
    cells = 0
    for child in node.iter(include_text=True):
        tag = child.tag
        if _invisible(child):
            continue
        if tag in CELLS:
            parts.append((" | " if cells else "") + " ".join(_text(child).split()))
            cells += 1
        elif tag == "-text" or tag in INLINE or tag == "br":
            parts.append(_text(child))
        else:
            parts.append("\n" + _text(child) + "\n")
    return "".join(parts)


def _invisible(node: Any) -> bool:
    """Whether a node is never shown: a skipped kind of element, or one marked ``hidden`` or
    ``aria-hidden="true"`` (with all it holds)."""
    if node.tag in SKIPPED:
        return True
    if node.tag == "-text":
        return False
    attributes = node.attributes
    return "hidden" in attributes or (attributes.get("aria-hidden") or "").strip().lower() == "true"

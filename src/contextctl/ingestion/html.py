"""HTML (parsed by ``selectolax``'s Lexbor engine): ``h1`` to ``h6`` make the heading path;
paragraphs, list items, table rows, preformatted text, quotes and definitions are blocks of their
visible text. Scripts, styles, navigation, elements marked ``hidden`` or ``aria-hidden="true"``
and other invisible parts are left out; the page's ``<title>`` is the document's title."""

from __future__ import annotations

import re
from typing import Any

from selectolax.lexbor import LexborHTMLParser

from context_service.contextctl.ingestion.blocks import LINES, Document, Outline
from context_service.contextctl.ingestion.decoding import NotADocument
from context_service.contextctl.ingestion.meter import Done, unreported

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
REPORTED_LEVELS = 4  # how deep into nested containers the walk tells how far it has come
_UNITS = 1 << 20  # the whole page, in the units the walk tells its progress in


def parse(text: str, name: str, done: Done = unreported) -> Document:
    """``done`` hears of each element walked in the page's outer levels (a page is most often a
    few wrappers around its content), each an equal share of its parent's."""
    tree = LexborHTMLParser(text)
    title_node = _page_title(tree)
    title = clean(title_node.text()) if title_node is not None else ""
    document = Document(title or name)
    root = tree.body or tree.root
    if root is not None:
        _Walker(document, done).walk(root, (0, _UNITS))
    if not document.blocks and tree.css_first("script") is not None:
        # an app's page, drawn by its scripts from data they hold (ChatGPT's export writes
        # chat.html beside conversations.json, the same conversations): found in a folder, it
        # refused the whole run as a page without text
        raise NotADocument("a page its scripts draw, without text of its own")
    return document


def _page_title(tree: LexborHTMLParser) -> Any:
    """The page's own ``<title>``, as a browser's ``document.title`` finds it: not an inline SVG
    icon's (its label, which a page without a title of its own gave every passage)."""
    for node in tree.css("title"):
        parent = node.parent
        while parent is not None and parent.tag != "svg":
            parent = parent.parent
        if parent is None:
            return node
    return None


def clean(text: str) -> str:
    """Runs of spaces made one, blank lines and spaces around lines dropped."""
    lines = (_SPACES.sub(" ", line).strip() for line in text.split("\n"))
    return "\n".join(line for line in lines if line)


class _Walker:
    def __init__(self, document: Document, done: Done = unreported) -> None:
        self.document = document
        self.outline = Outline()
        self.pending: list[str] = []
        self.done = done

    def walk(self, node: Any, span: tuple[int, int] | None = None, level: int = 0) -> None:
        """The blocks inside ``node``. ``span`` is its share of the page, told to ``done`` as
        each child is walked (``None`` below the outer levels: not told). One call a level of
        nesting, as before there was a bar: how deep a page can be read does not change."""
        children = node.iter(include_text=True)
        shares: list[tuple[int, int]] | None = None
        if span is not None:
            children = list(children)
            shares = _shares(span, len(children))
        for index, child in enumerate(children):
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
                inner = shares[index] if shares and level + 1 < REPORTED_LEVELS else None
                self.walk(child, inner, level + 1)
            if shares:
                self.done(shares[index][1], _UNITS)
        self.flush()

    def flush(self) -> None:
        self.add(clean("".join(self.pending)))
        self.pending.clear()

    def add(self, text: str, cut: str = "prose") -> None:
        if text.strip():
            self.document.blocks.append(self.outline.block(text, cut))


def _shares(span: tuple[int, int], count: int) -> list[tuple[int, int]]:
    """``span`` cut into ``count`` consecutive parts."""
    start, width = span[0], span[1] - span[0]
    return [(start + width * n // count, start + width * (n + 1) // count) for n in range(count)]


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

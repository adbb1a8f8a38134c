"""What every parser produces: a document's blocks (paragraphs, list items, code, table rows,
messages), each with the heading path it sits under and the anchor of its section. Anchors are
slugs of the section's heading, made unique within the document as GitHub does (``install``,
``install-1``), so a passage's id names the place it comes from."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

PROSE, LINES = "prose", "lines"  # how a block too long for one passage is cut: sentences, lines
_NOT_SLUG = re.compile(r"[^\w\- ]+")
_SPACES = re.compile(r"[\s\-]+")


@dataclass(frozen=True, slots=True)
class Block:
    heading: tuple[str, ...]  # the path of headings above the block (empty before the first)
    anchor: str  # the section's anchor; blocks of one section may share a passage
    text: str
    cut: str = PROSE
    valid_from: str | None = None  # RFC 3339, UTC (messages)
    alone: bool = False  # never shares a passage with another block (messages)
    # the conversation the block belongs to, in a file holding several (LoCoMo samples, an
    # export's conversations): each is a document of its own, ``<file>#<part>``
    part: str = ""


@dataclass(slots=True)
class Document:
    title: str  # used when a block has no heading: the document's own title, else its file name
    blocks: list[Block] = field(default_factory=list)
    # what the reader left out or read in a way of its own (a chat export's parts that are not
    # text, a message whose parent is missing): said in the report, never silently dropped
    notes: list[str] = field(default_factory=list)


def slug(text: str) -> str:
    """``"Install on Linux (x86)"`` → ``install-on-linux-x86``."""
    cleaned = _NOT_SLUG.sub("", text.lower()).replace("_", "-")
    return _SPACES.sub("-", cleaned).strip("-") or "section"


class Anchors:
    """Unique anchors within one document, in document order: a name taken gets the first
    free ``-<n>``. The numbers a name tried stay taken, so the next of the same name starts
    past them: a file of many names alike (an export's conversations of one id, a page of the
    same heading) is named in time linear in them, not in their square."""

    def __init__(self) -> None:
        self._used: set[str] = set()
        self._tried: dict[str, int] = {}  # name: the numbers below it are taken

    def new(self, heading: str) -> str:
        base = slug(heading)
        number = self._tried.get(base, 0)
        anchor = f"{base}-{number}" if number else base
        while anchor in self._used:
            number += 1
            anchor = f"{base}-{number}"
        self._used.add(anchor)
        self._tried[base] = number + 1
        return anchor


class Outline:
    """The heading path as headings of levels 1 to 6 are met, and the current anchor."""

    def __init__(self) -> None:
        self.anchors = Anchors()
        self._levels: list[tuple[int, str]] = []
        self.anchor = ""

    def heading(self, level: int, text: str) -> None:
        while self._levels and self._levels[-1][0] >= level:
            self._levels.pop()
        self._levels.append((level, text))
        self.anchor = self.anchors.new(text)

    @property
    def path(self) -> tuple[str, ...]:
        return tuple(text for _, text in self._levels)

    def block(self, text: str, cut: str = PROSE) -> Block:
        return Block(self.path, self.anchor, text, cut)

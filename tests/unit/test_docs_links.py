"""The documentation stays walkable: every relative link in README.md and docs/**/*.md names a
file that exists, every `#anchor` it carries names a heading (or an explicit `<a id>`) of that
file, and the README stays short enough to read (at most 200 lines). Links are read with the
Markdown parser itself, so text inside code spans and fences is never taken for one."""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
from markdown_it import MarkdownIt
from markdown_it.token import Token

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCUMENTS = sorted([README, *(ROOT / "docs").rglob("*.md")])
README_MAX_LINES = 200


def _tokens(tokens: list[Token]) -> Iterator[Token]:
    for token in tokens:
        yield token
        if token.children:
            yield from _tokens(token.children)


def relative_targets(document: Path) -> list[str]:
    """The targets of the document's links and images that point into the repository."""
    parsed = MarkdownIt("commonmark").parse(document.read_text(encoding="utf-8"))
    targets = []
    for token in _tokens(parsed):
        target = token.attrGet("href") if token.type == "link_open" else (
            token.attrGet("src") if token.type == "image" else None)
        if not isinstance(target, str):
            continue
        parts = urlsplit(target)
        if parts.scheme or parts.netloc or not parts.path:  # a web address or an anchor here
            continue
        targets.append(target)
    return targets


def anchored_targets(document: Path) -> list[tuple[Path, str]]:
    """The Markdown file and the anchor of every link of the document that names one (a bare
    ``#anchor`` is the document itself)."""
    parsed = MarkdownIt("commonmark").parse(document.read_text(encoding="utf-8"))
    found = []
    for token in _tokens(parsed):
        target = token.attrGet("href") if token.type == "link_open" else None
        if not isinstance(target, str):
            continue
        parts = urlsplit(target)
        if parts.scheme or parts.netloc or not parts.fragment:
            continue
        file = document.parent / unquote(parts.path) if parts.path else document
        if file.suffix == ".md":
            found.append((file, unquote(parts.fragment)))
    return found


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(document: Path) -> set[str]:
    """Every anchor a link may name in the document: its headings' slugs (a repeated heading
    gets ``-1``, ``-2``, ...) and the ids of ``<a id="...">`` / ``<a name="...">`` tags."""
    text = document.read_text(encoding="utf-8")
    tokens = MarkdownIt("commonmark").parse(text)
    found: set[str] = set(re.findall(r'<a\s+(?:id|name)="([^"]+)"', text))
    seen: dict[str, int] = {}
    for opening, inline in itertools.pairwise(tokens):
        if opening.type != "heading_open":
            continue
        words = "".join(child.content for child in _tokens(inline.children or [])
                        if child.type in ("text", "code_inline"))
        base = slug(words)
        found.add(base if base not in seen else f"{base}-{seen[base]}")
        seen[base] = seen.get(base, 0) + 1
    return found


def test_the_documents_are_found() -> None:
    assert README in DOCUMENTS
    assert len(DOCUMENTS) > 10


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_names_an_existing_file(document: Path) -> None:
    broken = [target for target in relative_targets(document)
              if not (document.parent / unquote(urlsplit(target).path)).exists()]
    assert broken == [], f"{document.relative_to(ROOT)} links to missing files: {broken}"


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_anchor_names_a_heading(document: Path) -> None:
    broken = [f"{file.relative_to(ROOT)}#{anchor}" for file, anchor in anchored_targets(document)
              if file.exists() and anchor not in anchors(file)]
    assert broken == [], f"{document.relative_to(ROOT)} links to missing anchors: {broken}"


def test_anchors_are_the_slugs_of_headings(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("# Install on Linux (x86_64)!\n\n## `index push` parts\n\n## Notes\n\n"
                    "## Notes\n\n<a id=\"writes\"></a>\n\n[a](#notes-1) [b](page.md#nowhere)\n",
                    encoding="utf-8")
    assert anchors(page) == {"install-on-linux-x86_64", "index-push-parts", "notes", "notes-1",
                             "writes"}
    assert anchored_targets(page) == [(page, "notes-1"), (page, "nowhere")]


def test_a_link_inside_code_is_not_taken_for_one(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("[real](there.md) `[a-z]([-a-z]*)` and\n\n```\n[x](nowhere.md)\n```\n",
                    encoding="utf-8")
    assert relative_targets(page) == ["there.md"]


def test_the_readme_is_at_most_200_lines() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES, (
        f"README.md has {len(lines)} lines; move detail into docs/ and link it")

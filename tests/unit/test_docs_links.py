"""The documentation stays walkable: every relative link in README.md and docs/**/*.md names a
file that exists, and the README stays short enough to read (at most 200 lines). Links are read
with the Markdown parser itself, so text inside code spans and fences is never taken for one."""

from __future__ import annotations

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


def test_the_documents_are_found() -> None:
    assert README in DOCUMENTS
    assert len(DOCUMENTS) > 10


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_names_an_existing_file(document: Path) -> None:
    broken = [target for target in relative_targets(document)
              if not (document.parent / unquote(urlsplit(target).path)).exists()]
    assert broken == [], f"{document.relative_to(ROOT)} links to missing files: {broken}"


def test_a_link_inside_code_is_not_taken_for_one(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("[real](there.md) `[a-z]([-a-z]*)` and\n\n```\n[x](nowhere.md)\n```\n",
                    encoding="utf-8")
    assert relative_targets(page) == ["there.md"]


def test_the_readme_is_at_most_200_lines() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES, (
        f"README.md has {len(lines)} lines; move detail into docs/ and link it")

"""The placeholder scanner of spec 11.2 check 8: ``:name`` placeholders outside string literals
(``'…'``, ``E'…'``, dollar quotes), quoted identifiers and comments, ``::`` casts excepted;
each is rewritten to ``$k`` (k: the parameter's position). Pure text work, no SQL parser."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_NAME = re.compile(r"[a-z_][a-z0-9_]*")
# PostgreSQL's names and tags take any letter outside ASCII, those beyond the BMP (emoji) too
DOLLAR_TAG = re.compile(r"\$([A-Za-z_\u0080-\U0010ffff][A-Za-z0-9_\u0080-\U0010ffff]*)?\$")
IDENT_CHAR = re.compile(r"[A-Za-z0-9_$\u0080-\U0010ffff]")
_LINE_END = re.compile(r"[\n\r]")  # a line comment ends at either, as PostgreSQL's does
_SPACE = " \t\n\r\f\v"  # PostgreSQL's white space; no other character separates tokens


@dataclass
class Scan:
    """What the scanner found: the placeholders in order of appearance, whether a positional
    ``$n`` occurs, and the text split around the placeholders."""

    placeholders: list[str] = field(default_factory=list)
    positional: bool = False
    pieces: list[str] = field(default_factory=list)  # len(placeholders) + 1 pieces

    def rewritten(self, positions: dict[str, int]) -> str:
        out = [self.pieces[0]]
        for name, piece in zip(self.placeholders, self.pieces[1:], strict=True):
            out.append(f"${positions[name]}")
            out.append(piece)
        return "".join(out)


def _ident_before(sql: str, i: int) -> bool:
    return i > 0 and IDENT_CHAR.match(sql[i - 1]) is not None


def _skip_block_comment(sql: str, i: int) -> int:
    depth, i = 1, i + 2  # PostgreSQL block comments nest
    while i < len(sql) and depth:
        if sql.startswith("/*", i):
            depth, i = depth + 1, i + 2
        elif sql.startswith("*/", i):
            depth, i = depth - 1, i + 2
        else:
            i += 1
    return i


def _skip_quoted(sql: str, i: int, quote: str, backslash: bool) -> int:
    """``i`` at the opening quote; the index after the closing one (doubled quotes and, in
    ``E''`` strings, backslash escapes stay inside)."""
    i += 1
    while i < len(sql):
        c = sql[i]
        if backslash and c == "\\":
            i += 2
            continue
        if c == quote:
            if sql.startswith(quote, i + 1):
                i += 2
                continue
            return i + 1
        i += 1
    return i


def skip_lexeme(sql: str, i: int) -> int | None:
    """When a comment, a string literal (``'…'``, ``E'…'``), a quoted name or a dollar quote
    starts at ``i``: the index after it (the text's end when it is not closed); else None."""
    if sql.startswith("--", i):
        line_end = _LINE_END.search(sql, i)
        return len(sql) if line_end is None else line_end.end()
    if sql.startswith("/*", i):
        return _skip_block_comment(sql, i)
    c = sql[i] if i < len(sql) else ""
    if c == "'":
        escaped = i > 0 and sql[i - 1] in "eE" and not _ident_before(sql, i - 1)
        return _skip_quoted(sql, i, "'", escaped)
    if c == '"':
        return _skip_quoted(sql, i, '"', False)
    if c == "$" and not _ident_before(sql, i):
        tag = DOLLAR_TAG.match(sql, i)
        if tag is not None:
            end = sql.find(tag.group(0), tag.end())
            return len(sql) if end < 0 else end + len(tag.group(0))
    return None


def skip_trivia(sql: str, i: int = 0) -> int:
    """Past white space and comments from ``i``."""
    while i < len(sql):
        if sql[i] in _SPACE:
            i += 1
        elif sql.startswith("--", i):
            end = _LINE_END.search(sql, i)
            i = len(sql) if end is None else end.end()
        elif sql.startswith("/*", i):
            i = _skip_block_comment(sql, i)
        else:
            break
    return i


def scan(sql: str) -> Scan:
    result = Scan()
    start = i = 0
    n = len(sql)
    while i < n:
        c = sql[i]
        if c == "$" and not _ident_before(sql, i) and i + 1 < n and sql[i + 1].isdigit():
            result.positional = True
            i += 1
        elif c in "-/'\"$" and (past := skip_lexeme(sql, i)) is not None:
            i = past
        elif c == ":":
            if sql.startswith("::", i):
                i += 2
                continue
            name = _NAME.match(sql, i + 1)
            if name is None:
                i += 1
                continue
            result.pieces.append(sql[start:i])
            result.placeholders.append(name.group(0))
            start = i = name.end()
        else:
            i += 1
    result.pieces.append(sql[start:])
    return result

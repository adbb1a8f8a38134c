"""The tokenizer (spec 5.2): Unicode lowercasing, letters and Nd digits only, duplicates kept."""

from __future__ import annotations

import pytest

from context_service.domain.query.tokenizer import tokenize


@pytest.mark.parametrize(("text", "tokens"), [
    ("Release-schedule v2!", ["release", "schedule", "v2"]),
    ("", []),
    ("   \t\n", []),
    ("!!!---...", []),
    ("a_b", ["a", "b"]),  # underscore is punctuation, not a word character
    ("snake_case-and.dots,commas;semi:colon/slash\\back", [
        "snake", "case", "and", "dots", "commas", "semi", "colon", "slash", "back"]),
    ("it's", ["it", "s"]),
    ("e-mail@example.com", ["e", "mail", "example", "com"]),
    ("release release RELEASE", ["release", "release", "release"]),
    ("v1.2.3", ["v1", "2", "3"]),
    ("x\u00b2y", ["x", "y"]),  # superscript two is numeric (No), not a decimal digit
    ("\u00bd cup", ["cup"]),  # vulgar fraction (No)
    ("chapter \u216b", ["chapter"]),  # Roman numeral twelve (Nl)
    ("\u0663\u0664 \u096a", ["\u0663\u0664", "\u096a"]),  # Arabic-Indic, Devanagari digits (Nd)
    ("\uff11\uff12", ["\uff11\uff12"]),  # fullwidth digits (Nd)
    ("Stra\u00dfe \u00dcBER", ["stra\u00dfe", "\u00fcber"]),
    ("\u6771\u4eac\u30bf\u30ef\u30fc", ["\u6771\u4eac\u30bf\u30ef\u30fc"]),  # Lo runs
    ("\u01c5ungla", ["\u01c6ungla"]),  # titlecase letter (Lt) lowercased
    ("\u02b0x", ["\u02b0x"]),  # modifier letter (Lm) is a letter
    ("cafe\u0301", ["cafe"]),  # a combining mark (Mn) splits
    ("na\u00efve", ["na\u00efve"]),  # precomposed letter stays
    ("a\u200db", ["a", "b"]),  # zero-width joiner (Cf) splits
    ("a\u00a0b\u3000c", ["a", "b", "c"]),  # no-break and ideographic spaces
    ("\u0130stanbul", ["i", "stanbul"]),  # full lowercasing yields i + combining dot (Mn)
    ("\u039f\u0394\u039f\u03a3", ["\u03bf\u03b4\u03bf\u03c2"]),  # final sigma in context
    ("\U0001d400\U0001d7ce", ["\U0001d400\U0001d7ce"]),  # math letter (Lu) + math digit (Nd)
    ("emoji\U0001f600face", ["emoji", "face"]),
    ("tab\tnew\nline\rcr", ["tab", "new", "line", "cr"]),
])
def test_tokenize(text: str, tokens: list[str]) -> None:
    assert tokenize(text) == tokens


def test_tokens_are_only_letters_and_decimal_digits() -> None:
    text = "".join(chr(c) for c in range(0x20, 0x3000))
    for token in tokenize(text):
        assert all(ch.isalpha() or ch.isdecimal() for ch in token)

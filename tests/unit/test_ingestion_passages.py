"""Passages of ingested documents (pure): every passage within the token cap, nothing of the
text lost or reordered, ids unique and tied to their section, so editing one section leaves the
ids and texts of the others as they were. Counts are the service's tokenizer's."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from context_service.contextctl.ingestion import markdown
from context_service.contextctl.ingestion.blocks import LINES, Anchors, Block, Document, slug
from context_service.contextctl.ingestion.passages import passages, record_id
from context_service.contextctl.ingestion.tokens import counter

WORDS = st.sampled_from(["ledger", "orchard", "replica", "tenant", "a", "of", "Übergröße",
                         "東京", "x" * 40, "2026-03-01", "don't", "(see", "below).", "🙂"])
SENTENCES = st.lists(WORDS, min_size=1, max_size=60).map(lambda w: " ".join(w) + ".")
BLOCKS = st.lists(st.tuples(st.integers(0, 3), st.lists(SENTENCES, min_size=1, max_size=8),
                            st.booleans()), min_size=1, max_size=12)


def document(spec: list[tuple[int, list[str], bool]]) -> Document:
    made = Document("doc.md")
    for section, sentences, lines in spec:
        made.blocks.append(Block((f"Part {section}",), f"part-{section}",
                                 ("\n" if lines else " ").join(sentences),
                                 LINES if lines else "prose"))
    return made


def squeezed(text: str) -> str:
    return "".join(text.split())


@given(BLOCKS, st.sampled_from([32, 48, 256]))
def test_passages_respect_the_cap_and_keep_every_character(
        spec: list[tuple[int, list[str], bool]], most: int) -> None:
    doc = document(spec)
    made = passages(doc, "doc.md", counter(), most)
    assert made
    assert all(0 < p.tokens <= most and p.tokens == counter().full_count(p.text) for p in made)
    assert squeezed("".join(p.text for p in made)) == squeezed("".join(
        b.text for b in doc.blocks))
    assert len({p.id for p in made}) == len(made)
    assert all(p.id.startswith("doc.md#part-") and p.file == "doc.md" for p in made)


def test_small_blocks_of_a_section_share_a_passage_and_sections_never_do() -> None:
    doc = Document("doc.md", [Block(("A",), "a", "one"), Block(("A",), "a", "two"),
                              Block(("B",), "b", "three")])
    made = passages(doc, "doc.md", counter(), 256)
    assert [(p.id, p.title, p.text) for p in made] == [
        ("doc.md#a:1", "A", "one\n\ntwo"), ("doc.md#b:1", "B", "three")]


def test_messages_stay_alone_with_their_time() -> None:
    doc = Document("chat.jsonl", [
        Block((), "m1", "user: hi", valid_from="2026-01-01T00:00:00Z", alone=True),
        Block((), "m2", "bot: hello", alone=True)])
    made = passages(doc, "chat.jsonl", counter(), 256)
    assert [(p.id, p.title, p.valid_from) for p in made] == [
        ("chat.jsonl#m1:1", "chat.jsonl", "2026-01-01T00:00:00Z"),
        ("chat.jsonl#m2:1", "chat.jsonl", None)]


def test_editing_one_section_keeps_the_others() -> None:
    body = "\n\n".join(f"## Section {n}\n\n" + " ".join(["ledger entry"] * (40 + n))
                       for n in range(6))
    edited = body.replace("## Section 2\n\nledger", "## Section 2\n\nchanged ledger")
    before = passages(markdown.parse(body, "a.md"), "a.md", counter(), 64)
    after = passages(markdown.parse(edited, "a.md"), "a.md", counter(), 64)
    kept = {p.id: p.text for p in before if "#section-2:" not in p.id}
    assert kept == {p.id: p.text for p in after if "#section-2:" not in p.id}
    assert {p.id for p in before} == {p.id for p in after}


def test_ids_and_anchors() -> None:
    assert record_id("a/b.md", "install", 2) == "a/b.md#install:2"
    assert record_id("notes.txt", "", 3) == "notes.txt#3"
    assert slug("Install on Linux (x86_64)!") == "install-on-linux-x86-64"
    assert slug("Größe — 東京") == "größe-東京"
    anchors = Anchors()
    assert [anchors.new(h) for h in ("Example", "Example", "Example 1", "")] == [
        "example", "example-1", "example-1-1", "section"]


def test_token_counts_are_the_services() -> None:
    assert counter().count("Who is the current CFO, and since when?") == 11  # agent api 7.6


@given(st.text(max_size=200) | st.lists(WORDS, max_size=30).map(" ".join))
def test_counts_word_by_word_equal_the_tokenizers(text: str) -> None:
    assert counter().count(text) == counter().full_count(text)

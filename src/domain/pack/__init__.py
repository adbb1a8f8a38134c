"""Context packs (agent-context-api §5, §7, §8): the corpus a pack reads, retrieval, packing,
the receipt and replays. Pure: the clock, the tokenizer, the vector scan and access arrive as
parameters or ports."""

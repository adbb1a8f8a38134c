"""The retrieval rules of pack-engine/2 as pure functions (docs/pack-engine.md, "pack-engine/2"):
the analyzer, BM25 over its terms, pseudo-relevance feedback, turns (questions, answers and
neighbours), informative turns, the document prior, the vectors in their context, the fusion
with the vectors' cosines, and the relevance floor."""

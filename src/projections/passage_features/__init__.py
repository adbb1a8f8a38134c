"""passage_features: token counts and embeddings of every published text, by text hash."""

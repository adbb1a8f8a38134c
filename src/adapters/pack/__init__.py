"""What packs read, over PostgreSQL and the embedding model: the corpus and its retrieval."""

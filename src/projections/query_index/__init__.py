"""query_index: the searchable records of each memory and knowledge context (spec 5, 6.5)."""

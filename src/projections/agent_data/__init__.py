"""agent_data: the latest index of each live context as packs read it (passages, documents)."""

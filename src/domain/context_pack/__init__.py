"""The context_pack aggregate: one stream per replay id, holding the release of a pack and every
replay run of it (agent-context-api.md §7.13, §8, §12)."""

"""The workspace aggregate: members of a namespace and their roles (agent-context-api.md §3)."""

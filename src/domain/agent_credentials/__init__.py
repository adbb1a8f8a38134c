"""The agent-credentials aggregate: one stream per workspace, so the cap on active credentials
is an invariant of one aggregate (agent-context-api.md §4)."""

"""The execution sandbox of query templates (agent-context-api §11.5): the restricted login,
its start-up check, the registration check and the runs."""

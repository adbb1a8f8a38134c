"""Studied fields (agent-context-api §10): pure rules of plans, filters, sorts and aggregates."""

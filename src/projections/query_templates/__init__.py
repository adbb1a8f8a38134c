"""query_templates: every template's status and current version (spec 12.5)."""

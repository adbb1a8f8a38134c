"""Ingestion: files and folders (Markdown, plain text, HTML, PDF, chat transcripts) to passages
with stable ids, a content-addressed revision with provenance, and a published query index, with
no model call. ``ingest`` is the entry point; ``contextctl ingest`` is its command."""

from context_service.contextctl.ingestion.api import (
    DEFAULT_MAX_TOKENS,
    IngestFailed,
    Progress,
    ingest,
)
from context_service.contextctl.ingestion.reading import Skipped
from context_service.contextctl.ingestion.report import IngestReport

__all__ = ["DEFAULT_MAX_TOKENS", "IngestFailed", "IngestReport", "Progress", "Skipped", "ingest"]

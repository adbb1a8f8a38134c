"""Command handling of query templates (one stream per namespace and id) and the recording of
runs (one stream per run id)."""

from __future__ import annotations

from context_service.adapters.eventstore.application import (
    Clock,
    Outcome,
    StreamApplication,
    utc_now,
)
from context_service.adapters.eventstore.store import EventStore
from context_service.domain.query_template.commands import QueryTemplateCommand
from context_service.domain.query_template.decide import decide
from context_service.domain.query_template.events import QueryTemplateRun
from context_service.domain.query_template.state import (
    QueryTemplateState,
    evolve,
    query_run_stream,
    query_template_stream,
)


class QueryTemplateApplication(StreamApplication[QueryTemplateState]):
    def __init__(self, store: EventStore, clock: Clock = utc_now) -> None:
        super().__init__(store, "query_template", QueryTemplateState, evolve, decide, clock)

    def load(self, namespace: str, template_id: str) -> tuple[int, QueryTemplateState]:
        return self.load_stream(query_template_stream(namespace, template_id))

    def execute(self, namespace: str,
                command: QueryTemplateCommand) -> Outcome[QueryTemplateState]:
        return self.execute_on(query_template_stream(namespace, command.template_id), command)

    def record_run(self, namespace: str, event: QueryTemplateRun) -> int:
        """Append the run's single event to its own new stream; the log position."""
        return self.store.append(query_run_stream(namespace, event.run_id), 0, [event])

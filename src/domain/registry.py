"""Stable event name -> event class. Stored topics are these names, never module paths.

Renaming or moving a module cannot break stored events; changing an event's meaning means a new
name (and an upcaster in the mapper).
"""

from __future__ import annotations

from context_service.domain.agent_credentials.events import CREDENTIAL_EVENTS
from context_service.domain.context.events import CONTEXT_EVENTS, LIFECYCLE_EVENTS, ContextAdopted
from context_service.domain.context_pack.events import CONTEXT_PACK_EVENTS
from context_service.domain.context_set.events import CONTEXT_SET_EVENTS
from context_service.domain.events import Event
from context_service.domain.pool.events import POOL_EVENTS
from context_service.domain.query_template.events import QUERY_RUN_EVENTS, QUERY_TEMPLATE_EVENTS
from context_service.domain.workspace.events import WORKSPACE_EVENTS

_ALL: tuple[type[Event], ...] = (*CONTEXT_EVENTS, ContextAdopted, *LIFECYCLE_EVENTS,
                                  *POOL_EVENTS, *WORKSPACE_EVENTS, *CREDENTIAL_EVENTS,
                                  *CONTEXT_SET_EVENTS, *CONTEXT_PACK_EVENTS,
                                  *QUERY_TEMPLATE_EVENTS, *QUERY_RUN_EVENTS)


def _build(classes: tuple[type[Event], ...]) -> dict[str, type[Event]]:
    table: dict[str, type[Event]] = {}
    for cls in classes:
        name = cls.__struct_config__.tag
        if not isinstance(name, str) or name in table:
            raise RuntimeError(f"event {cls.__name__} needs a unique string tag")
        table[name] = cls
    return table


EVENTS: dict[str, type[Event]] = _build(_ALL)


def register(*classes: type[Event]) -> None:
    """Add the events of another aggregate (called once at import of its module)."""
    for name, cls in _build(classes).items():
        if EVENTS.get(name, cls) is not cls:
            raise RuntimeError(f"event name {name} registered twice")
        EVENTS[name] = cls


def event_name(event: Event) -> str:
    tag = type(event).__struct_config__.tag
    assert isinstance(tag, str)
    return tag


def event_name_of(cls: type[Event]) -> str:
    tag = cls.__struct_config__.tag
    assert isinstance(tag, str)
    return tag

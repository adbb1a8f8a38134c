"""Stored event shapes stay decodable forever (design 2.4, 5).

``tests/golden/events/<EventName>[.<variant>].json`` holds a stored body of each registered event
as it was first written. Every body must still decode with today's classes, without any of its
fields being ignored, and must round-trip through the mapper. Golden files are never edited to
follow a code change: changing an event's meaning means a new event name (see the README there).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from types import UnionType
from typing import Any, Union, get_args, get_origin

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from context_service.adapters.eventstore.mapper import (
    decode_event,
    event_data,
    from_stored,
    to_stored,
)
from context_service.domain.events import Event
from context_service.domain.registry import EVENTS, event_name
from context_service.domain.stream import StreamRef, context_stream

GOLDEN = Path(__file__).resolve().parent.parent / "golden" / "events"
FILES = sorted(GOLDEN.glob("*.json"))
STREAM = context_stream("team1", "research-memory")


def registered_name(path: Path) -> str:
    return path.name.split(".", 1)[0]


def contained(golden: Any, current: Any, where: str = "$") -> None:
    """Every value of the golden document is present, unchanged, in the current encoding."""
    if isinstance(golden, dict):
        assert isinstance(current, dict), where
        for key, value in golden.items():
            assert key in current, f"{where}.{key} is no longer decoded"
            contained(value, current[key], f"{where}.{key}")
    elif isinstance(golden, list):
        assert isinstance(current, list), where
        assert len(golden) == len(current), where
        for index, (old, new) in enumerate(zip(golden, current, strict=True)):
            contained(old, new, f"{where}[{index}]")
    else:
        assert golden == current, where


def test_every_registered_event_has_a_golden_file_and_vice_versa() -> None:
    on_disk = {registered_name(path) for path in FILES}
    assert sorted(set(EVENTS) - on_disk) == [], "add a golden file (tests/golden/README.md)"
    assert sorted(on_disk - set(EVENTS)) == [], "a stored event name disappeared from the registry"


@pytest.mark.parametrize("path", FILES, ids=[path.name for path in FILES])
def test_golden_body_decodes_with_the_current_classes(path: Path) -> None:
    body = path.read_bytes()
    name = registered_name(path)
    event = decode_event(name, body)
    assert type(event) is EVENTS[name]
    assert event_name(event) == name
    golden = msgspec.json.decode(body)
    assert golden["event"] == name
    contained(golden, msgspec.json.decode(msgspec.json.encode(event)))


@pytest.mark.parametrize("path", FILES, ids=[path.name for path in FILES])
def test_golden_event_round_trips_through_the_mapper(path: Path) -> None:
    name = registered_name(path)
    event = decode_event(name, path.read_bytes())
    stored = to_stored(STREAM, 7, event)
    assert stored.topic == name
    assert stored.originator_id == STREAM.id
    assert stored.originator_version == 7
    recorded = from_stored(42, 7, stored.topic, stored.state)
    assert recorded.event == event
    assert (recorded.position, recorded.stream, recorded.version, recorded.name) == (
        42, STREAM, 7, name)
    data = event_data(event)
    assert "event" not in data
    assert data == {k: v for k, v in msgspec.to_builtins(event).items() if k != "event"}


aware = st.datetimes(timezones=st.sampled_from(
    (UTC, timezone(timedelta(hours=5, minutes=30)), timezone(-timedelta(hours=8)))))
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8)
    | st.floats(allow_nan=False, allow_infinity=False),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner,
                                                                max_size=3),
    max_leaves=8)


def values_of(annotation: Any) -> st.SearchStrategy[Any]:
    """Every field filled (st.builds alone would leave each optional field at its default)."""
    if annotation is Any or annotation is object:  # a JSON value (RecordField.value)
        return json_values
    if annotation is datetime:
        return aware
    if isinstance(annotation, type) and issubclass(annotation, msgspec.Struct):
        return st.builds(annotation, **{f.name: st.deferred(lambda t=f.type: values_of(t))
                                        for f in msgspec.structs.fields(annotation)})
    origin, args = get_origin(annotation), get_args(annotation)
    if origin in (Union, UnionType):
        return st.one_of(*(values_of(arg) for arg in args))
    if origin is tuple:
        return st.lists(values_of(args[0]), max_size=3).map(tuple)
    if origin is dict:
        return st.dictionaries(values_of(args[0]), values_of(args[1]), max_size=3)
    return st.from_type(annotation)


arbitrary_events: st.SearchStrategy[Event] = st.one_of(*map(values_of, EVENTS.values()))
streams = st.builds(StreamRef, st.sampled_from(("context", "pool")), st.text(max_size=20),
                    st.text(max_size=20))


@given(arbitrary_events, streams, st.integers(1, 2**31), st.integers(1, 2**62))
def test_every_event_round_trips_through_the_mapper(
        event: Event, stream: StreamRef, version: int, position: int) -> None:
    stored = to_stored(stream, version, event)
    recorded = from_stored(position, version, stored.topic, stored.state)
    assert recorded.event == event
    assert recorded.stream == stream
    assert recorded.name == event_name(event)


# Index bodies, the first stored before the extended query records and multi-part uploads
# existed: today's classes write each back byte for byte (empty new fields are left out, the
# original ones always written), and so do the envelope data and history export built from it.
EXACT = ("QueryIndexPublished.json", "QueryIndexPublished.extended.json",
         "QueryIndexPublished.upload.json", "QueryIndexPartStaged.json")


@pytest.mark.parametrize("name", EXACT)
def test_index_bodies_encode_exactly_as_stored(name: str) -> None:
    body = (GOLDEN / name).read_bytes()
    event = decode_event(registered_name(GOLDEN / name), body)
    compact = msgspec.json.encode(msgspec.json.decode(body))
    assert msgspec.json.encode(event) == compact
    envelope_data = event_data(event)
    assert msgspec.json.encode(envelope_data) == msgspec.json.encode(
        {k: v for k, v in msgspec.json.decode(body).items() if k != "event"})

"""``ensure_stream``: creates the stream, brings changed limits in line, refuses memory storage."""

from __future__ import annotations

import asyncio
import dataclasses

import nats
import pytest
from nats.js import api

from context_service.adapters.nats.stream import (
    StreamMismatchError,
    StreamSpec,
    ensure_stream,
    last_envelope,
)
from tests.support.nats_fixtures import NatsServerHandle, fresh_stream_spec

pytestmark = pytest.mark.nats


def test_create_then_update_in_place(
    nats_server: NatsServerHandle, nats_stream: StreamSpec
) -> None:
    async def run() -> None:
        nc = await nats.connect(nats_server.url)
        try:
            js = nc.jetstream()
            created = await ensure_stream(js, nats_stream)
            assert created.config.subjects == [f"{nats_stream.subject_prefix}.>"]
            assert created.config.storage == api.StorageType.FILE
            assert created.config.duplicate_window == pytest.approx(120.0)
            assert await last_envelope(js, nats_stream.name) is None
            same = await ensure_stream(js, nats_stream)
            assert same.state.first_seq == created.state.first_seq
            changed = dataclasses.replace(nats_stream, duplicate_window=30.0, max_age=3600.0)
            updated = await ensure_stream(js, changed)
            assert updated.config.duplicate_window == pytest.approx(30.0)
            assert updated.config.max_age == pytest.approx(3600.0)
        finally:
            await nc.close()

    asyncio.run(run())


def test_memory_storage_is_refused(nats_server: NatsServerHandle) -> None:
    spec = fresh_stream_spec()

    async def run() -> None:
        nc = await nats.connect(nats_server.url)
        js = nc.jetstream()
        try:
            config = dataclasses.replace(spec.config(), storage=api.StorageType.MEMORY)
            await js.add_stream(config)
            with pytest.raises(StreamMismatchError, match="file storage is required"):
                await ensure_stream(js, spec)
        finally:
            await js.delete_stream(spec.name)
            await nc.close()

    asyncio.run(run())

"""The relay as a service worker: the relay thread, with ``stop()`` for shutdown and ``gauges()``
for /metrics, plus the embedded nats-server it starts without CS_NATS_URL (``server``, which its
owner stops after every worker)."""

from __future__ import annotations

import logging

from context_service.adapters.nats.relay import Relay, RelaySettings
from context_service.adapters.nats.server import EmbeddedNatsServer
from context_service.adapters.nats.stream import StreamSpec
from context_service.config import Settings
from context_service.projections.outbox import EventFeed, PositionStore
from context_service.urls import redacted

log = logging.getLogger(__name__)
Gauge = tuple[str, str, dict[str, str], float]


class RelayWorker:
    def __init__(self, settings: Settings, feed: EventFeed, positions: PositionStore) -> None:
        self.server: EmbeddedNatsServer | None = None
        url = settings.nats_url
        if url is None:
            self.server = EmbeddedNatsServer.from_settings(settings)
            url = self.server.start()
        self.url = url
        stream = StreamSpec(duplicate_window=settings.nats_duplicate_window_seconds,
                            max_age=settings.nats_max_age_seconds)
        self.relay = Relay(feed, positions, RelaySettings(url=url, stream=stream))

    def start(self) -> RelayWorker:
        self.relay.start()
        log.info("relay publishing to JetStream", extra={"url": redacted(self.url)})
        return self

    def stop(self) -> None:
        """Stop publishing once JetStream acknowledged what is in flight (the server stays)."""
        self.relay.stop()

    def gauges(self) -> list[Gauge]:
        s = self.relay.stats
        return [
            ("cs_relay_published_total", "Events stored in JetStream by the relay.", {},
             s.published),
            ("cs_relay_duplicates_total", "Republished events JetStream already had.", {},
             s.duplicates),
            ("cs_relay_omitted_total", "Events published without their data (above the "
             "server's max_payload or the stream's max_msg_size).", {}, s.omitted),
            ("cs_relay_unknown_total", "Events of a type this version does not know, published "
             "with their stored fields.", {}, s.unknown),
            ("cs_relay_errors_total", "Relay errors (publishing is retried).", {}, s.errors),
            ("cs_relay_position", "Last log position JetStream acknowledged.", {},
             s.last_position),
            ("cs_relay_checkpoint", "Last log position the relay saved as its checkpoint.", {},
             s.saved_position),
            ("cs_relay_in_flight", "Published events awaiting acknowledgement.", {}, s.in_flight),
            ("cs_relay_connected", "1 when connected to NATS.", {}, 1.0 if s.connected else 0.0),
            ("cs_relay_stream_full", "1 while the stream is full and refuses new events (the "
             "relay waits; the log names the limit).", {}, 1.0 if s.stream_full else 0.0),
        ]

"""Every setting refuses a value it cannot honour with one line naming the setting, the values it
takes and the value given, instead of a traceback or a silent default; settings that contradict
each other are refused together."""

from __future__ import annotations

import pytest

from context_service.config import Settings, SettingsError


def refusal(env: dict[str, str]) -> str:
    with pytest.raises(SettingsError) as caught:
        Settings.from_env(env)
    message = str(caught.value)
    assert "\n" not in message
    return message


@pytest.mark.parametrize("key", ["CS_REQUIRE_SUBJECT", "CS_MIRROR_QUERY_INDEX",
                                 "CS_SETTINGS_DEV_SUBJECT"])
@pytest.mark.parametrize("raw", ["ture", "enabled", "2", "y e s"])
def test_a_misspelt_switch_is_refused_not_read_as_false(key: str, raw: str) -> None:
    # CS_REQUIRE_SUBJECT=ture used to leave the service open to callers without a subject
    assert refusal({key: raw}) == (
        f"{key} must be true or false (or 1/0, yes/no, on/off), got {raw!r}")


@pytest.mark.parametrize(("raw", "value"), [("TRUE", True), (" on ", True), ("1", True),
                                            ("No", False), ("off", False), ("0", False),
                                            ("", False)])
def test_a_switch_reads_the_usual_spellings(raw: str, value: bool) -> None:
    assert Settings.from_env({"CS_REQUIRE_SUBJECT": raw}).require_subject is value


@pytest.mark.parametrize("raw", ["xml", "jsonl", "plain"])
def test_an_unknown_log_format_is_refused(raw: str) -> None:
    assert refusal({"CS_LOG_FORMAT": raw}) == (
        f"CS_LOG_FORMAT must be auto, json or text, got {raw!r}")


def test_the_log_format_ignores_case() -> None:
    assert Settings.from_env({"CS_LOG_FORMAT": " JSON "}).log_format == "json"


@pytest.mark.parametrize("raw", ["projection", "projections,relays", "query_index"])
def test_an_unknown_worker_is_refused(raw: str) -> None:
    # a typo used to start no worker at all, and nothing said so
    message = refusal({"CS_WORKERS": raw})
    assert message.startswith("CS_WORKERS names unknown worker(s) ")
    assert message.endswith("; known: projections, query-index, reconciler, relay, snapshots "
                            "(comma-separated; empty: none)")


def test_known_workers_load_in_any_order_and_once() -> None:
    loaded = Settings.from_env({"CS_WORKERS": " relay ,projections,relay"})
    assert loaded.workers == ("relay", "projections")
    assert Settings.from_env({"CS_WORKERS": ""}).workers == ()


@pytest.mark.parametrize("raw", ["8080", "localhost:99999", "localhost:0", "localhost:-1",
                                 "localhost:http", "local host:8080",
                                 "localhost:\uff18\uff10\uff18\uff10",  # full-width digits
                                 "localhost:" + "9" * 5000, "::1", "::1:8080", "[::1]"])
@pytest.mark.parametrize("key", ["CS_LISTEN_ADDR", "CS_NATS_LISTEN"])
def test_a_listen_address_that_is_not_host_and_port_is_refused(key: str, raw: str) -> None:
    # "8080" used to listen on every interface and answer any Host; 99999 failed only at bind
    assert refusal({key: raw}) == (
        f"{key} must be host:port with a port from 1 to 65535 (such as 127.0.0.1:8080, "
        f"[::1]:8080, or :8080 for every interface), got {raw!r}")


def test_an_ipv6_listen_address_is_bound_without_its_brackets() -> None:
    loaded = Settings.from_env({"CS_LISTEN_ADDR": "[::1]:9000"})
    assert (loaded.listen_host, loaded.listen_port) == ("::1", 9000)
    assert {"::1", "localhost", "127.0.0.1"} <= loaded.allowed_host_names
    assert Settings.from_env({"CS_LISTEN_ADDR": ":9000"}).listen_host == "0.0.0.0"


@pytest.mark.parametrize("key", ["CS_AGENT_RATE_BURST", "CS_AGENT_QUERY_CONNECTIONS",
                                 "CS_PACK_CACHE_MIB", "CS_AGENT_QUERY_PER_WORKSPACE",
                                 "CS_AUTH_FAILURE_BURST"])
@pytest.mark.parametrize("raw", ["²", "٣", "0", "-3", "1.5", "ten", "9" * 5000])
def test_a_count_that_is_not_a_plain_positive_integer_is_refused(key: str, raw: str) -> None:
    # "²" passed str.isdigit and then failed int() with a traceback
    assert refusal({key: raw}) == f"{key} must be a positive integer, got {raw!r}"


@pytest.mark.parametrize("key", ["CS_READ_WAIT_SECONDS", "CS_SHUTDOWN_GRACE",
                                 "CS_AGENT_QUERY_WAIT_SECONDS"])
@pytest.mark.parametrize("raw", ["1e308", "86401", "1e10"])
def test_seconds_beyond_a_day_are_refused(key: str, raw: str) -> None:
    # a wait longer than threading.TIMEOUT_MAX raised OverflowError inside a request or the drain
    assert refusal({key: raw}) == f"{key} must be at most 86400 seconds (a day), got {raw!r}"


@pytest.mark.parametrize(("key", "what"), [("CS_AGENT_RATE_PER_SECOND", "requests"),
                                           ("CS_AUTH_FAILURE_PER_SECOND", "failures")])
@pytest.mark.parametrize("raw", ["x", "-1", "nan", "inf", "5/s"])
def test_a_rate_is_refused_as_a_rate_not_as_seconds(key: str, what: str, raw: str) -> None:
    assert refusal({key: raw}) == (
        f"{key} must be a number of {what} per second (0 or more; 0 turns the limit off), "
        f"got {raw!r}")


@pytest.mark.parametrize("key", ["CS_NATS_DUPLICATE_WINDOW", "CS_NATS_MAX_AGE",
                                 "CS_REPLAY_RETENTION"])
def test_a_duration_beyond_go_s_largest_is_refused(key: str) -> None:
    # JetStream takes nanoseconds in 64 bits; a retention past timedelta's range crashed serve
    assert refusal({key: "99999999999h"}) == (
        f"{key} must be at most 2562047h (the longest duration), got '99999999999h'")


def test_the_longest_duration_still_loads() -> None:
    loaded = Settings.from_env({"CS_REPLAY_RETENTION": "2562047h"})
    assert loaded.replay_retention_seconds == 2562047 * 3600.0


@pytest.mark.parametrize("raw", ["Serverless", "my_ns", "-ns", "a" * 64, "ns.with.dots"])
def test_a_namespace_that_is_not_a_dns_label_is_refused(raw: str) -> None:
    # Kubernetes refused it on the first reconcile, long after start-up
    assert refusal({"CS_NAMESPACE": raw}) == (
        "CS_NAMESPACE must be a DNS label (lower-case letters, digits and '-', at most 63, "
        f"starting and ending with a letter or digit), got {raw!r}")


def test_an_unknown_kube_mode_is_named() -> None:
    assert refusal({"CS_KUBE": "On"}) == (
        "CS_KUBE must be auto, local, kubeconfig, in-cluster or off, got 'On'")


def test_a_credential_key_of_blanks_is_refused() -> None:
    assert refusal({"CS_CREDENTIAL_KEY": " " * 40}) == (
        "CS_CREDENTIAL_KEY must be at least 32 characters, not all blank")


def test_the_query_mirror_is_left_to_the_processes_with_kubernetes() -> None:
    # one ConfigMap sets it for every pod (deploy/components/query-mirror), the workers without
    # Kubernetes among them: they start, and leave the mirror to the one that has a cluster
    loaded = Settings.from_env({"CS_MIRROR_QUERY_INDEX": "true", "CS_KUBE": "off"})
    assert (loaded.mirror_query_index, loaded.kube_mode) == (True, "off")


def test_the_http_and_embedded_nats_ports_may_not_be_the_same() -> None:
    assert refusal({"CS_LISTEN_ADDR": "127.0.0.1:4222"}) == (
        "CS_LISTEN_ADDR and CS_NATS_LISTEN name the same port (4222); the embedded "
        "nats-server could not listen (set another port, or CS_NATS_URL)")
    external = Settings.from_env({"CS_LISTEN_ADDR": "127.0.0.1:4222",
                                  "CS_NATS_URL": "nats://nats:4222"})
    assert external.listen_port == 4222
    no_relay = Settings.from_env({"CS_LISTEN_ADDR": "127.0.0.1:4222", "CS_WORKERS": ""})
    assert no_relay.listen_port == 4222  # nothing starts a nats-server here
    assert refusal({"CS_LISTEN_ADDR": ":4222"}).startswith("CS_LISTEN_ADDR and CS_NATS_LISTEN")
    apart = Settings.from_env({"CS_LISTEN_ADDR": "127.0.0.2:4222"})
    assert apart.listen_port == 4222  # distinct loopback addresses do not collide

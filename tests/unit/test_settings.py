"""Settings from the environment: seconds-valued settings parse strictly."""

from __future__ import annotations

import pytest

from context_service.config import Settings, SettingsError


def test_shutdown_grace_defaults_to_twenty_seconds() -> None:
    assert Settings.from_env({}).shutdown_grace == 20.0
    assert Settings.from_env({"CS_SHUTDOWN_GRACE": " "}).shutdown_grace == 20.0


@pytest.mark.parametrize(("raw", "seconds"), [("5", 5.0), ("0", 0.0), ("2.5", 2.5)])
def test_shutdown_grace_reads_seconds(raw: str, seconds: float) -> None:
    assert Settings.from_env({"CS_SHUTDOWN_GRACE": raw}).shutdown_grace == seconds


@pytest.mark.parametrize("raw", ["soon", "-1", "nan", "inf", "20s"])
@pytest.mark.parametrize("key", ["CS_SHUTDOWN_GRACE", "CS_READ_WAIT_SECONDS",
                                 "CS_LOCK_WAIT_SECONDS", "CS_KUBE_REQUEST_BUDGET_SECONDS"])
def test_invalid_seconds_are_refused_with_the_setting_named(key: str, raw: str) -> None:
    with pytest.raises(SettingsError) as caught:
        Settings.from_env({key: raw})
    assert str(caught.value) == f"{key} must be a number of seconds (0 or more), got {raw!r}"


def test_the_lock_wait_is_read_in_seconds_and_reaches_every_database_session() -> None:
    from context_service.adapters.postgres.database import _bound_lock_waits

    assert Settings.from_env({}).lock_wait_seconds == 5.0
    assert Settings.from_env({"CS_LOCK_WAIT_SECONDS": "0.5"}).lock_wait_seconds == 0.5

    class Pool:
        kwargs: dict[str, str] = {}

    class Datastore:
        pool = Pool()

    for seconds, millis in ((5.0, 5000), (0.0001, 1), (0, 0)):  # 0: no bound
        _bound_lock_waits(Datastore(), seconds)  # type: ignore[arg-type]
        assert Pool.kwargs["options"].split(" -c ") == [
            f"-c lock_timeout={millis}", "client_connection_check_interval=100"]


def test_the_kube_request_budget_is_read_in_seconds_and_never_zero() -> None:
    assert Settings.from_env({}).kube_request_budget_seconds == 10.0
    budget = Settings.from_env({"CS_KUBE_REQUEST_BUDGET_SECONDS": "2.5"})
    assert budget.kube_request_budget_seconds == 2.5
    with pytest.raises(SettingsError) as caught:  # it would refuse every request's first call
        Settings.from_env({"CS_KUBE_REQUEST_BUDGET_SECONDS": "0"})
    assert str(caught.value) == ("CS_KUBE_REQUEST_BUDGET_SECONDS must be more than 0 seconds, "
                                 "got '0'")


def test_the_pack_corpus_cache_bound_is_read_in_mib() -> None:
    assert Settings.from_env({}).pack_cache_mib == 3072
    assert Settings.from_env({"CS_PACK_CACHE_MIB": "8192"}).pack_cache_mib == 8192
    for raw in ("0", "-1", "3GiB", "1.5"):
        with pytest.raises(SettingsError, match="CS_PACK_CACHE_MIB must be a positive integer"):
            Settings.from_env({"CS_PACK_CACHE_MIB": raw})


def test_the_event_stream_s_window_and_age_are_durations() -> None:
    default = Settings.from_env({})
    assert (default.nats_duplicate_window_seconds, default.nats_max_age_seconds) == (120.0, None)
    set_ = Settings.from_env({"CS_NATS_DUPLICATE_WINDOW": "30s", "CS_NATS_MAX_AGE": "720h"})
    assert (set_.nats_duplicate_window_seconds, set_.nats_max_age_seconds) == (30.0, 2_592_000.0)
    for key, raw in (("CS_NATS_DUPLICATE_WINDOW", "0s"), ("CS_NATS_MAX_AGE", "soon"),
                     ("CS_NATS_DUPLICATE_WINDOW", "-2m")):
        with pytest.raises(SettingsError, match=f"{key} must be a positive duration"):
            Settings.from_env({key: raw})
    with pytest.raises(SettingsError, match="must not be longer than CS_NATS_MAX_AGE"):
        Settings.from_env({"CS_NATS_MAX_AGE": "1m"})


def test_the_relay_creates_its_stream_with_the_settings() -> None:
    from context_service.adapters.nats.worker import RelayWorker

    settings = Settings(nats_url="nats://127.0.0.1:1", nats_duplicate_window_seconds=30.0,
                        nats_max_age_seconds=3600.0)
    worker = RelayWorker(settings, None, None)  # type: ignore[arg-type]  # not started
    config = worker.relay._settings.stream.config()
    assert (config.duplicate_window, config.max_age) == (30.0, 3600.0)


def test_a_nats_url_naming_no_server_is_refused_and_a_list_is_kept() -> None:
    for raw in (",", " , ,"):
        with pytest.raises(SettingsError) as caught:
            Settings.from_env({"CS_NATS_URL": raw})
        assert str(caught.value).startswith("CS_NATS_URL names no server")
    listed = "nats://u:pw@a:4222,nats://b:4222"
    assert Settings.from_env({"CS_NATS_URL": f" {listed} "}).nats_url == listed
    assert Settings.from_env({"CS_NATS_URL": " "}).nats_url is None

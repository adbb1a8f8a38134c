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
@pytest.mark.parametrize("key", ["CS_SHUTDOWN_GRACE", "CS_READ_WAIT_SECONDS"])
def test_invalid_seconds_are_refused_with_the_setting_named(key: str, raw: str) -> None:
    with pytest.raises(SettingsError) as caught:
        Settings.from_env({key: raw})
    assert str(caught.value) == f"{key} must be a number of seconds (0 or more), got {raw!r}"


def test_the_pack_corpus_cache_bound_is_read_in_mib() -> None:
    assert Settings.from_env({}).pack_cache_mib == 3072
    assert Settings.from_env({"CS_PACK_CACHE_MIB": "8192"}).pack_cache_mib == 8192
    for raw in ("0", "-1", "3GiB", "1.5"):
        with pytest.raises(SettingsError, match="CS_PACK_CACHE_MIB must be a positive integer"):
            Settings.from_env({"CS_PACK_CACHE_MIB": raw})

"""Typed settings: one frozen tree loaded once from the environment (``CS_*``).

Nothing below this module reads the environment; the composition root passes ``Settings`` down.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from context_service.domain.values import parse_duration_ns


class SettingsError(ValueError):
    """A setting is missing or malformed."""


def _flag(env: Mapping[str, str], key: str, default: bool = False) -> bool:
    raw = env.get(key)
    if raw is None or raw.strip() == "":
        return default
    return raw.strip().lower() in ("1", "true", "yes", "on")


def _seconds(env: Mapping[str, str], key: str, default: float) -> float:
    """A non-negative number of seconds; unset or empty means ``default``."""
    raw = env.get(key, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not 0 <= value < float("inf"):
        raise SettingsError(f"{key} must be a number of seconds (0 or more), got {raw!r}")
    return value


def _listen(raw: str) -> tuple[str, int]:
    host, _, port = raw.rpartition(":")
    try:
        number = int(port)
    except ValueError as exc:
        raise SettingsError(f"CS_LISTEN_ADDR must be host:port, got {raw!r}") from exc
    return (host or "0.0.0.0", number)


@dataclass(frozen=True)
class Settings:
    listen_addr: str = "127.0.0.1:8080"
    data_dir: Path = Path("./.context-service")
    database_url: str | None = None
    namespace: str = "serverless-harness"
    sandbox_image: str = ""
    sandbox_service_account: str = ""
    require_subject: bool = False
    mirror_query_index: bool = False
    nats_url: str | None = None
    nats_listen: str = "127.0.0.1:4222"
    kube_mode: str = "auto"  # auto | local | kubeconfig | in-cluster | off
    workers: tuple[str, ...] = ("projections", "query-index", "reconciler", "relay", "snapshots")
    read_wait_seconds: float = 5.0
    # how long a shutdown lets requests in flight finish before answering them 503
    shutdown_grace: float = 20.0
    log_format: str = "auto"  # auto | json | text
    credential_key: str = ""  # CS_CREDENTIAL_KEY; empty: generated once and kept in the database
    agent_rate_per_second: float = 5.0  # 0 turns the per-credential limit off
    agent_rate_burst: int = 20
    replay_retention_seconds: float = 720 * 3600.0  # CS_REPLAY_RETENTION (default 720h)
    settings_dev_subject: bool = False  # the settings pages let the person type the subject
    agent_query_url: str = ""  # CS_AGENT_QUERY_URL; empty: the managed cs_agent_query login
    agent_query_connections: int = 4  # CS_AGENT_QUERY_CONNECTIONS
    # how long a template run waits for a database session before answering 503
    agent_query_wait_seconds: float = 0.5  # CS_AGENT_QUERY_WAIT_SECONDS
    agent_query_per_workspace: int = 2  # CS_AGENT_QUERY_PER_WORKSPACE: concurrent runs a workspace
    # CS_ALLOWED_HOSTS: the Host names the service answers for; empty: derived from the listen
    # address (see ``allowed_host_names``); "*" answers any host
    allowed_hosts: tuple[str, ...] = ()
    gateway_secret: str = ""  # CS_GATEWAY_SECRET: the gateway's proof beside X-Context-Subject
    # failed authentications one client address may make in a burst before 429 (refill per second)
    auth_failure_burst: int = 20  # CS_AUTH_FAILURE_BURST
    auth_failure_per_second: float = 2.0  # CS_AUTH_FAILURE_PER_SECOND
    # CS_PACK_CACHE_MIB: the bound of the packs' corpus cache (about 200,000 passages at 3 GiB);
    # an index larger than it is loaded again by every pack over it
    pack_cache_mib: int = 3072
    # CS_NATS_DUPLICATE_WINDOW / CS_NATS_MAX_AGE: the JetStream stream's duplicate window (how
    # late a republish is still dropped) and how long it keeps events (None: for ever)
    nats_duplicate_window_seconds: float = 120.0
    nats_max_age_seconds: float | None = None
    extra: Mapping[str, str] = field(default_factory=dict)

    @property
    def listen_host(self) -> str:
        return _listen(self.listen_addr)[0]

    @property
    def listen_port(self) -> int:
        return _listen(self.listen_addr)[1]

    @property
    def allowed_host_names(self) -> frozenset[str]:
        """The Host names (without port, lower case) requests may carry; ``*`` means any.

        Unset: the listen host, plus ``localhost``, ``127.0.0.1`` and ``::1`` when it is a
        loopback address; a wildcard listen address (``0.0.0.0``, ``::``) without the setting
        answers any host (a cluster sets ``CS_ALLOWED_HOSTS`` in the deploy manifests)."""
        if self.allowed_hosts:
            return frozenset(h.lower() for h in self.allowed_hosts)
        host = self.listen_host.strip("[]").lower()
        if host in ("0.0.0.0", "::", ""):
            return frozenset({"*"})
        names = {host}
        if host in ("127.0.0.1", "localhost", "::1") or host.startswith("127."):
            names |= {"localhost", "127.0.0.1", "::1"}
        return frozenset(names)

    @staticmethod
    def from_env(env: Mapping[str, str] | None = None) -> Settings:
        env = os.environ if env is None else env
        workers_raw = env.get("CS_WORKERS")
        workers = (
            tuple(w.strip() for w in workers_raw.split(",") if w.strip())
            if workers_raw is not None
            else Settings.workers
        )
        kube_mode = env.get("CS_KUBE", "auto").strip() or "auto"
        if kube_mode not in ("auto", "local", "kubeconfig", "in-cluster", "off"):
            raise SettingsError("CS_KUBE must be auto, local, kubeconfig, in-cluster or off")
        settings = Settings(
            listen_addr=env.get("CS_LISTEN_ADDR", "").strip() or "127.0.0.1:8080",
            data_dir=Path(env.get("CS_DATA_DIR", "").strip() or "./.context-service"),
            database_url=env.get("CS_DATABASE_URL", "").strip() or None,
            namespace=env.get("CS_NAMESPACE", "").strip() or "serverless-harness",
            sandbox_image=env.get("CS_SANDBOX_IMAGE", "").strip(),
            sandbox_service_account=env.get("CS_SANDBOX_SERVICE_ACCOUNT", "").strip(),
            require_subject=_flag(env, "CS_REQUIRE_SUBJECT"),
            mirror_query_index=_flag(env, "CS_MIRROR_QUERY_INDEX"),
            nats_url=env.get("CS_NATS_URL", "").strip() or None,
            nats_listen=env.get("CS_NATS_LISTEN", "").strip() or "127.0.0.1:4222",
            kube_mode=kube_mode,
            workers=workers,
            read_wait_seconds=_seconds(env, "CS_READ_WAIT_SECONDS", 5.0),
            shutdown_grace=_seconds(env, "CS_SHUTDOWN_GRACE", 20.0),
            log_format=env.get("CS_LOG_FORMAT", "auto").strip() or "auto",
            settings_dev_subject=_flag(env, "CS_SETTINGS_DEV_SUBJECT"),
            allowed_hosts=tuple(h.strip() for h in env.get("CS_ALLOWED_HOSTS", "").split(",")
                                if h.strip()),
            gateway_secret=env.get("CS_GATEWAY_SECRET", "").strip(),
            **Settings._stream(env),  # type: ignore[arg-type]
            **Settings._agent(env),  # type: ignore[arg-type]
        )
        _listen(settings.listen_addr)
        return settings

    @staticmethod
    def _stream(env: Mapping[str, str]) -> dict[str, object]:
        """The JetStream stream's duplicate window and age limit (JetStream refuses a window
        longer than the age limit)."""
        window = _duration(env, "CS_NATS_DUPLICATE_WINDOW", "2m")
        age = (_duration(env, "CS_NATS_MAX_AGE", "") if env.get("CS_NATS_MAX_AGE", "").strip()
               else None)
        if age is not None and window > age:
            raise SettingsError("CS_NATS_DUPLICATE_WINDOW must not be longer than CS_NATS_MAX_AGE")
        return {"nats_duplicate_window_seconds": window, "nats_max_age_seconds": age}

    @staticmethod
    def _agent(env: Mapping[str, str]) -> dict[str, object]:
        """The agent API's settings (agent-context-api.md §13)."""
        key = env.get("CS_CREDENTIAL_KEY", "")
        if key and len(key) < 32:
            raise SettingsError("CS_CREDENTIAL_KEY must be at least 32 characters")
        try:
            rate = float(env.get("CS_AGENT_RATE_PER_SECOND", "").strip() or 5)
        except ValueError:
            rate = -1.0
        if not rate >= 0 or rate == float("inf"):
            raise SettingsError("CS_AGENT_RATE_PER_SECOND must be a non-negative number")
        burst_raw = env.get("CS_AGENT_RATE_BURST", "").strip() or "20"
        if not burst_raw.isdigit() or int(burst_raw) < 1:
            raise SettingsError("CS_AGENT_RATE_BURST must be a positive integer")
        slots = env.get("CS_AGENT_QUERY_CONNECTIONS", "").strip() or "4"
        if not slots.isdigit() or int(slots) < 1:
            raise SettingsError("CS_AGENT_QUERY_CONNECTIONS must be a positive integer")
        return {"credential_key": key, "agent_rate_per_second": rate,
                "agent_query_wait_seconds": _seconds(env, "CS_AGENT_QUERY_WAIT_SECONDS", 0.5),
                "agent_query_per_workspace": _positive(env, "CS_AGENT_QUERY_PER_WORKSPACE", 2),
                "auth_failure_burst": _positive(env, "CS_AUTH_FAILURE_BURST", 20),
                "auth_failure_per_second": _seconds(env, "CS_AUTH_FAILURE_PER_SECOND", 2.0),
                "pack_cache_mib": _positive(env, "CS_PACK_CACHE_MIB", 3072),
                "agent_query_url": env.get("CS_AGENT_QUERY_URL", "").strip(),
                "agent_query_connections": int(slots),
                "agent_rate_burst": int(burst_raw),
                "replay_retention_seconds": _retention(env.get("CS_REPLAY_RETENTION", ""))}


def _positive(env: Mapping[str, str], key: str, default: int) -> int:
    raw = env.get(key, "").strip() or str(default)
    if not raw.isdigit() or int(raw) < 1:
        raise SettingsError(f"{key} must be a positive integer")
    return int(raw)


def _duration(env: Mapping[str, str], key: str, default: str) -> float:
    """Seconds of a positive Go-style duration setting (``2m``, ``720h``)."""
    nanos = parse_duration_ns(env.get(key, "").strip() or default)
    if nanos is None or nanos <= 0:
        raise SettingsError(f"{key} must be a positive duration such as 2m or 720h")
    return nanos / 1e9


def _retention(raw: str) -> float:
    """``CS_REPLAY_RETENTION``: a positive Go-style duration (``720h``, ``90s``)."""
    text = raw.strip() or "720h"
    nanos = parse_duration_ns(text)
    if nanos is None or nanos <= 0:
        raise SettingsError("CS_REPLAY_RETENTION must be a positive duration")
    return nanos / 1e9

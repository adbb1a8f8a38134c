"""Typed settings: one frozen tree loaded once from the environment (``CS_*``).

Nothing below this module reads the environment; the composition root passes ``Settings`` down.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from context_service.domain.values import is_dns_label, parse_duration_ns
from context_service.urls import redacted, servers


class SettingsError(ValueError):
    """A setting is missing or malformed."""


# the spellings a switch takes; anything else is refused rather than read as false (a
# misspelt CS_REQUIRE_SUBJECT would otherwise open the service to callers without a subject)
_SWITCH = {"1": True, "true": True, "yes": True, "on": True,
           "0": False, "false": False, "no": False, "off": False}
KUBE_MODES = ("auto", "local", "kubeconfig", "in-cluster", "off")
LOG_FORMATS = ("auto", "json", "text")
# the workers ``serve`` can run in-process (``CS_WORKERS``), and ``worker NAME`` by itself
KNOWN_WORKERS = ("projections", "query-index", "reconciler", "relay", "snapshots")
# the longest wait a setting may ask for: far above any sensible one, and far below
# ``threading.TIMEOUT_MAX``, past which a wait raises OverflowError inside a request or the drain
MAX_WAIT_SECONDS = 86400
# Go's largest duration (int64 nanoseconds, about 292 years): JetStream takes its limits so
MAX_DURATION_NS = 2**63 - 1
_WILDCARD_HOSTS = ("0.0.0.0", "::")


def _flag(env: Mapping[str, str], key: str, default: bool = False) -> bool:
    raw = env.get(key, "").strip()
    if not raw:
        return default
    value = _SWITCH.get(raw.lower())
    if value is None:
        raise SettingsError(f"{key} must be true or false (or 1/0, yes/no, on/off), got {raw!r}")
    return value


def _choice(env: Mapping[str, str], key: str, choices: tuple[str, ...], default: str,
            fold_case: bool = False) -> str:
    raw = env.get(key, "").strip()
    value = (raw.lower() if fold_case else raw) or default
    if value not in choices:
        listed = f"{', '.join(choices[:-1])} or {choices[-1]}"
        raise SettingsError(f"{key} must be {listed}, got {raw!r}")
    return value


def _non_negative(raw: str) -> float | None:
    """``raw`` as a finite number of 0 or more; None when it is not one (NaN fails both
    comparisons)."""
    try:
        value = float(raw)
    except ValueError:
        return None
    return value if 0 <= value < float("inf") else None


def _seconds(env: Mapping[str, str], key: str, default: float) -> float:
    """A number of seconds from 0 to a day; unset or empty means ``default``."""
    raw = env.get(key, "").strip()
    if not raw:
        return default
    value = _non_negative(raw)
    if value is None:
        raise SettingsError(f"{key} must be a number of seconds (0 or more), got {raw!r}")
    if value > MAX_WAIT_SECONDS:
        raise SettingsError(f"{key} must be at most {MAX_WAIT_SECONDS} seconds (a day), "
                            f"got {raw!r}")
    return value


def _positive_seconds(env: Mapping[str, str], key: str, default: float) -> float:
    """A number of seconds above 0, at most a day (a bound of 0 would refuse everything)."""
    value = _seconds(env, key, default)
    if value == 0:
        raise SettingsError(f"{key} must be more than 0 seconds, got {env[key].strip()!r}")
    return value


def _rate(env: Mapping[str, str], key: str, what: str, default: float) -> float:
    """A finite, non-negative number of ``what`` per second; 0 turns its limit off."""
    raw = env.get(key, "").strip()
    if not raw:
        return default
    value = _non_negative(raw)
    if value is None:
        raise SettingsError(f"{key} must be a number of {what} per second (0 or more; 0 turns "
                            f"the limit off), got {raw!r}")
    return value


def _digits(raw: str) -> bool:
    """Whether ``raw`` is a whole number ``int()`` takes: ASCII digits only (``str.isdigit``
    also takes "²", which ``int()`` refuses), and not thousands of them (``int()`` refuses
    more than 4,300)."""
    return 0 < len(raw) <= 18 and raw.isascii() and raw.isdigit()


def _positive(env: Mapping[str, str], key: str, default: int) -> int:
    raw = env.get(key, "").strip()
    if not raw:
        return default
    if not _digits(raw) or int(raw) < 1:
        raise SettingsError(f"{key} must be a positive integer, got {raw!r}")
    return int(raw)


def _address(key: str, raw: str) -> tuple[str, int]:
    """``host:port`` (an IPv6 host in brackets; an empty host: every interface)."""
    host, colon, port = raw.rpartition(":")
    bracketed = host.startswith("[") and host.endswith("]")
    host = host[1:-1] if bracketed else host
    # an IPv6 host without brackets is ambiguous ("::1" would be host ":" and port 1)
    if (not colon or not _digits(port) or not 1 <= int(port) <= 65535
            or any(c.isspace() or c in "[]" for c in host) or (":" in host and not bracketed)):
        raise SettingsError(
            f"{key} must be host:port with a port from 1 to 65535 (such as 127.0.0.1:8080, "
            f"[::1]:8080, or :8080 for every interface), got {raw!r}")
    return (host or "0.0.0.0", int(port))


def _nats_url(env: Mapping[str, str]) -> str | None:
    """A NATS server, or a cluster's servers comma-separated; a value naming none (``,``) is
    refused here rather than retried for ever by the relay."""
    raw = env.get("CS_NATS_URL", "").strip()
    if raw and not servers(raw):
        raise SettingsError(f"CS_NATS_URL names no server, got {redacted(raw)!r}")
    return raw or None


def _workers(env: Mapping[str, str]) -> tuple[str, ...]:
    raw = env.get("CS_WORKERS")
    if raw is None:
        return KNOWN_WORKERS
    named = tuple(dict.fromkeys(w.strip() for w in raw.split(",") if w.strip()))
    unknown = [w for w in named if w not in KNOWN_WORKERS]
    if unknown:  # a typo would otherwise start no worker, and nothing would say so
        raise SettingsError(f"CS_WORKERS names unknown worker(s) {', '.join(unknown)}; known: "
                            f"{', '.join(KNOWN_WORKERS)} (comma-separated; empty: none)")
    return named


def _namespace(env: Mapping[str, str]) -> str:
    raw = env.get("CS_NAMESPACE", "").strip() or "serverless-harness"
    if not is_dns_label(raw):  # else Kubernetes refuses it on the first reconcile
        raise SettingsError(
            "CS_NAMESPACE must be a DNS label (lower-case letters, digits and '-', at most 63, "
            f"starting and ending with a letter or digit), got {raw!r}")
    return raw


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
    # how long one HTTP request's Kubernetes calls may take together (adapters.kubernetes.rest)
    kube_request_budget_seconds: float = 10.0
    workers: tuple[str, ...] = KNOWN_WORKERS
    read_wait_seconds: float = 5.0
    # how long a database session waits for a lock another holds (0: no bound)
    lock_wait_seconds: float = 5.0
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
        return _address("CS_LISTEN_ADDR", self.listen_addr)[0]

    @property
    def listen_port(self) -> int:
        return _address("CS_LISTEN_ADDR", self.listen_addr)[1]

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
        settings = Settings(
            listen_addr=env.get("CS_LISTEN_ADDR", "").strip() or "127.0.0.1:8080",
            data_dir=Path(env.get("CS_DATA_DIR", "").strip() or "./.context-service"),
            database_url=env.get("CS_DATABASE_URL", "").strip() or None,
            namespace=_namespace(env),
            sandbox_image=env.get("CS_SANDBOX_IMAGE", "").strip(),
            sandbox_service_account=env.get("CS_SANDBOX_SERVICE_ACCOUNT", "").strip(),
            require_subject=_flag(env, "CS_REQUIRE_SUBJECT"),
            mirror_query_index=_flag(env, "CS_MIRROR_QUERY_INDEX"),
            nats_url=_nats_url(env),
            nats_listen=env.get("CS_NATS_LISTEN", "").strip() or "127.0.0.1:4222",
            kube_mode=_choice(env, "CS_KUBE", KUBE_MODES, "auto"),
            kube_request_budget_seconds=_positive_seconds(env, "CS_KUBE_REQUEST_BUDGET_SECONDS",
                                                          10.0),
            workers=_workers(env),
            read_wait_seconds=_seconds(env, "CS_READ_WAIT_SECONDS", 5.0),
            lock_wait_seconds=_seconds(env, "CS_LOCK_WAIT_SECONDS", 5.0),
            shutdown_grace=_seconds(env, "CS_SHUTDOWN_GRACE", 20.0),
            log_format=_choice(env, "CS_LOG_FORMAT", LOG_FORMATS, "auto", fold_case=True),
            settings_dev_subject=_flag(env, "CS_SETTINGS_DEV_SUBJECT"),
            allowed_hosts=tuple(h.strip() for h in env.get("CS_ALLOWED_HOSTS", "").split(",")
                                if h.strip()),
            gateway_secret=env.get("CS_GATEWAY_SECRET", "").strip(),
            **Settings._stream(env),  # type: ignore[arg-type]
            **Settings._agent(env),  # type: ignore[arg-type]
        )
        settings._check_together()
        return settings

    def _check_together(self) -> None:
        """Settings each valid alone that cannot hold together."""
        http = _address("CS_LISTEN_ADDR", self.listen_addr)
        nats = _address("CS_NATS_LISTEN", self.nats_listen)
        embedded_nats = self.nats_url is None and "relay" in self.workers
        if embedded_nats and http[1] == nats[1] and (
                http[0] == nats[0] or {http[0], nats[0]} & set(_WILDCARD_HOSTS)):
            raise SettingsError(
                f"CS_LISTEN_ADDR and CS_NATS_LISTEN name the same port ({http[1]}); the "
                "embedded nats-server could not listen (set another port, or CS_NATS_URL)")

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
        if key and (len(key) < 32 or not key.strip()):
            raise SettingsError("CS_CREDENTIAL_KEY must be at least 32 characters, not all blank")
        return {"credential_key": key,
                "agent_rate_per_second": _rate(env, "CS_AGENT_RATE_PER_SECOND", "requests", 5.0),
                "agent_rate_burst": _positive(env, "CS_AGENT_RATE_BURST", 20),
                "agent_query_wait_seconds": _seconds(env, "CS_AGENT_QUERY_WAIT_SECONDS", 0.5),
                "agent_query_per_workspace": _positive(env, "CS_AGENT_QUERY_PER_WORKSPACE", 2),
                "auth_failure_burst": _positive(env, "CS_AUTH_FAILURE_BURST", 20),
                "auth_failure_per_second": _rate(env, "CS_AUTH_FAILURE_PER_SECOND", "failures",
                                                 2.0),
                "pack_cache_mib": _positive(env, "CS_PACK_CACHE_MIB", 3072),
                "agent_query_url": env.get("CS_AGENT_QUERY_URL", "").strip(),
                "agent_query_connections": _positive(env, "CS_AGENT_QUERY_CONNECTIONS", 4),
                "replay_retention_seconds": _duration(env, "CS_REPLAY_RETENTION", "720h",
                                                      shape="")}


def _duration(env: Mapping[str, str], key: str, default: str,
              shape: str = " such as 2m or 720h") -> float:
    """Seconds of a positive Go-style duration setting (``2m``, ``720h``), at most Go's largest
    (``shape``: how the refusal describes the value)."""
    raw = env.get(key, "").strip()
    nanos = parse_duration_ns(raw or default)
    if nanos is None or nanos <= 0:
        raise SettingsError(f"{key} must be a positive duration{shape}"
                            + (f", got {raw!r}" if shape else ""))
    if nanos > MAX_DURATION_NS:
        raise SettingsError(f"{key} must be at most {MAX_DURATION_NS // 3_600_000_000_000}h "
                            f"(the longest duration), got {raw!r}")
    return nanos / 1e9

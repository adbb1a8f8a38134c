"""The client's configuration: environment variables read once per invocation."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

DEFAULT_URL = "http://localhost:8080"
DEFAULT_NAMESPACE = "serverless-harness"


@dataclass(frozen=True, slots=True)
class Settings:
    url: str = DEFAULT_URL
    token: str = ""  # sent as X-SH-Auth for the ingress gateway; the service never reads it
    subject: str = ""  # sent as X-Context-Subject
    namespace: str = DEFAULT_NAMESPACE
    storage_class: str = ""
    agent_token: str = ""  # a bdk_ credential for the agent API (/api/agent/v1)
    timeout: float = 30.0

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        found = os.environ if env is None else env
        return cls(
            url=(found.get("CS_URL") or DEFAULT_URL).rstrip("/"),
            token=found.get("CS_TOKEN", ""),
            subject=found.get("CS_SUBJECT", "").strip(),
            namespace=found.get("CS_NAMESPACE") or DEFAULT_NAMESPACE,
            storage_class=found.get("CS_STORAGE_CLASS", ""),
            agent_token=found.get("CS_AGENT_TOKEN", "").strip(),
        )

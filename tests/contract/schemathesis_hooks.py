"""Schemathesis hooks of the OpenAPI fuzz test (loaded through SCHEMATHESIS_HOOKS).

- A JSON number with a zero fraction is an integer to JSON Schema, but the service refuses
  ``3.0`` where an integer is due (spec 1.1.3 rule 6): generated bodies write such numbers as
  integers.
- Contexts are created with the storage class the test put in the cluster (with a matching
  snapshot class), so snapshots can be taken and cloned from.
- Agent routes carry, as schemathesis's authentication, the bearer credential the test
  created for ``user:fuzz`` (``CS_FUZZ_TOKEN``).
- ``user:fuzz`` stays the seeded workspace's owner: a generated member change naming it is
  made about another subject, so the run cannot lock itself out.
"""

from __future__ import annotations

import os
from typing import Any

import schemathesis

FUZZ = {"kind": "user", "name": "fuzz"}
STAND_IN = "fuzz-stand-in"


def _integral(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: _integral(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_integral(v) for v in value]
    return value


def _path(context: Any) -> str:
    operation = getattr(context, "operation", None)
    return "" if operation is None else str(operation.path)


@schemathesis.hook
def map_body(context: Any, body: Any) -> Any:
    body = _integral(body)
    path = _path(context)
    storage = body.get("storage") if isinstance(body, dict) else None
    if path == "/v1/contexts" and isinstance(storage, dict):
        storage["storageClass"] = os.environ["CS_FUZZ_STORAGE_CLASS"]
    if path.endswith("/members") and isinstance(body, dict) and body.get("subject") == FUZZ:
        body["subject"] = {**FUZZ, "name": STAND_IN}
    return body


@schemathesis.hook
def map_path_parameters(context: Any, path_parameters: Any) -> Any:
    if isinstance(path_parameters, dict) and path_parameters.get("member") == "user:fuzz":
        path_parameters["member"] = f"user:{STAND_IN}"
    return path_parameters


@schemathesis.auth(refresh_interval=None, retry_on=[]).apply_to(path_regex="^/api/agent/")
class AgentCredential:
    """The bearer credential of the agent routes; schemathesis knows it is the authentication,
    so it also sends requests without it and with a wrong one (which must answer 401)."""

    def get(self, case: Any, ctx: Any) -> str:
        return os.environ["CS_FUZZ_TOKEN"]

    def set(self, case: Any, data: str, ctx: Any) -> None:
        case.headers = {k: v for k, v in (case.headers or {}).items()
                        if k.lower() != "authorization"}
        case.headers["Authorization"] = f"Bearer {data}"

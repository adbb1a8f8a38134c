"""Schemathesis hooks of the OpenAPI fuzz test (loaded through SCHEMATHESIS_HOOKS).

- A JSON number with a zero fraction is an integer to JSON Schema, but the service refuses
  ``3.0`` where an integer is due (spec 1.1.3 rule 6): generated bodies write such numbers as
  integers.
- Contexts are created with the storage class the test put in the cluster (with a matching
  snapshot class), so snapshots can be taken and cloned from.
- Agent routes carry, as schemathesis's authentication, the bearer credential the test
  created for ``user:fuzz`` (``CS_FUZZ_TOKEN``).
- ``user:fuzz`` keeps its role and its grants: a generated member change, grant or revocation
  naming it is made about another subject, so the run cannot lock itself out of what it made
  (schemathesis reuses names it saw in answers, ``fuzz`` among them); the seeded context,
  context set and membership are not deleted, which would leave later operations nothing.
"""

from __future__ import annotations

import json
import os
import re
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


def _guard_body(path: str, body: Any) -> Any:
    body = _integral(body)
    if not isinstance(body, dict):
        return body
    storage = body.get("storage")
    if path == "/v1/contexts" and isinstance(storage, dict):
        storage["storageClass"] = os.environ["CS_FUZZ_STORAGE_CLASS"]
    if path.endswith(("/members", "/grants")):
        if body.get("subject") == FUZZ:  # a member's role, a grant
            body["subject"] = {**FUZZ, "name": STAND_IN}
        if {k: body.get(k) for k in FUZZ} == FUZZ:  # a grant revoked
            body["name"] = STAND_IN
    return body


# what the test seeded, by the path parameter naming it: deleting it is asked of a stand-in
SEEDED = {"member": "user:fuzz", "name": "seeded", "id": "seeded-set"}


def _guard_path(path: str, method: str, parameters: Any) -> None:
    last = re.findall(r"\{(\w+)\}$", path)
    if (method.upper() == "DELETE" and last and isinstance(parameters, dict)
            and parameters.get(last[0]) == SEEDED.get(last[0])):
        parameters[last[0]] = "user:" + STAND_IN if last[0] == "member" else STAND_IN


@schemathesis.hook
def before_call(context: Any, case: Any, kwargs: Any) -> None:
    """On every request of every phase (generation hooks do not see the coverage phase's)."""
    path = str(case.operation.path)
    case.body = _guard_body(path, case.body)
    _guard_path(path, str(case.method), case.path_parameters)


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


@schemathesis.deserializer("application/x-ndjson")
def ndjson_lines(ctx: Any, response: Any) -> list[Any]:
    """Every line one JSON value, each ending in LF (a last line without one is malformed)."""
    text = response.content.decode("utf-8")
    if text and not text.endswith("\n"):
        raise ValueError("the last line does not end in LF")
    return [json.loads(line) for line in text.split("\n")[:-1]]

"""Schemathesis hooks of the OpenAPI fuzz test (loaded through SCHEMATHESIS_HOOKS).

- A JSON number with a zero fraction is an integer to JSON Schema, but the service refuses
  ``3.0`` where an integer is due (spec 1.1.3 rule 6): generated bodies write such numbers as
  integers.
- Contexts are created with the storage class the test put in the cluster (with a matching
  snapshot class), so snapshots can be taken and cloned from.
"""

from __future__ import annotations

import os
from typing import Any

import schemathesis


def _integral(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: _integral(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_integral(v) for v in value]
    return value


@schemathesis.hook
def map_body(context: Any, body: Any) -> Any:
    body = _integral(body)
    operation = getattr(context, "operation", None)
    storage = body.get("storage") if isinstance(body, dict) else None
    if operation is not None and operation.path == "/v1/contexts" and isinstance(storage, dict):
        storage["storageClass"] = os.environ["CS_FUZZ_STORAGE_CLASS"]
    return body

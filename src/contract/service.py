"""The service's own routes: liveness and readiness."""

from __future__ import annotations

from typing import Literal

from context_service.contract.base import Closed


class Health(Closed, kw_only=True):
    status: Literal["ok"]


class Readiness(Closed, kw_only=True):
    status: Literal["ready"]

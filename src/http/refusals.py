"""The refusals a route documents beyond the ones every route has, for ``responses=``.

Each is answered with the error body of the route's family (``/v1`` or ``/api``), which the
document fills in; a refusal with a narrower body names its Struct instead.
"""

from __future__ import annotations

from typing import Any

from litestar.openapi import ResponseSpec


def refusals(described: dict[int, str], bodies: dict[int, Any] | None = None
             ) -> dict[int, ResponseSpec]:
    """``{status: description}``; ``bodies`` gives a status its own body Struct."""
    return {status: ResponseSpec(data_container=(bodies or {}).get(status),
                                 description=description, generate_examples=False)
            for status, description in described.items()}

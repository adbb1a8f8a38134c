"""Every answer a test receives is checked against its route's contract.

A typed route declares its answer (``Response[ContextResource]``); each 2xx JSON answer of
such a route that a test gets through ``Api`` is decoded strictly into that Struct, so a key the
route writes and the contract does not name (``Closed`` answers), a missing required key or a
value of the wrong type fails the test that received it.
"""

from __future__ import annotations

from types import NoneType
from typing import Any, get_args
from urllib.parse import urlsplit

import msgspec
from litestar import Litestar


def check_answer(app: Litestar, method: str, url: str, status: int, media_type: str,
                 content: bytes) -> None:
    if not 200 <= status < 300 or not content or not media_type.startswith("application/json"):
        return
    shape = answer_of(app, method, urlsplit(url).path)
    if shape is None:
        return
    try:
        msgspec.json.decode(content, type=shape, strict=True)
    except msgspec.ValidationError as exc:
        raise AssertionError(f"{method} {url}: the answer breaks its contract "
                             f"{getattr(shape, '__name__', shape)}: {exc}\n{content[:2000]!r}"
                             ) from None


def answer_of(app: Litestar, method: str, path: str) -> Any:
    """The answer type a typed route declares, or None."""
    try:
        _, handler, *_ = app.asgi_router.handle_routing(path, method)
    except Exception:  # unknown path or method: nothing was declared
        return None
    args = get_args(handler.parsed_fn_signature.return_type.annotation)
    if not args or args[0] in (bytes, Any, NoneType):
        return None
    return args[0]

"""A typed Python client of the agent API (``/api/agent/v1``): synchronous ``Client`` and
asynchronous ``AsyncClient`` on httpx, answers as the contract's msgspec Structs, errors as
``ApiError`` subclasses, a request sent again (with backoff, honouring ``Retry-After``) only
where that is safe."""

from context_service.client.aio import AsyncClient, AsyncPackStream
from context_service.client.errors import (
    ApiError,
    Conflict,
    Forbidden,
    InvalidAnswer,
    InvalidRequest,
    NotFound,
    PackIncomplete,
    RateLimited,
    ServiceUnavailable,
    StreamFailed,
    Unauthorized,
)
from context_service.client.retry import Retry
from context_service.client.sync import Client, PackStream
from context_service.contract.agent import (
    AsOf,
    Budget,
    ContextPack,
    Filters,
    PackItem,
    PackRequest,
    Replay,
    ReplayRequest,
)

__all__ = [
    "ApiError", "AsOf", "AsyncClient", "AsyncPackStream", "Budget", "Client", "Conflict",
    "ContextPack", "Filters", "Forbidden", "InvalidAnswer", "InvalidRequest", "NotFound",
    "PackIncomplete", "PackItem", "PackRequest", "PackStream", "RateLimited", "Replay",
    "ReplayRequest", "Retry", "ServiceUnavailable", "StreamFailed", "Unauthorized",
]

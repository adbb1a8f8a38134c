"""An agent API error as an MCP tool error (``contract.tools.failure``): its code, message and
details, and when to try again where the answer said (``Retry-After``)."""

from __future__ import annotations

from context_service.contract import agent as c
from context_service.contract import tools as catalogue

UNAVAILABLE = c.ErrorBody(code="SERVICE_UNAVAILABLE",
                          message="the service could not catch up with the log in time")


def text_of(result: object) -> str:
    return result.content[0].text  # type: ignore[attr-defined, no-any-return]


def test_an_error_without_retry_after_carries_its_code_and_message_only() -> None:
    result = catalogue.failure(UNAVAILABLE)
    assert result.is_error and result.meta is None
    assert text_of(result) == ("SERVICE_UNAVAILABLE: the service could not catch up with the "
                               "log in time")
    assert result.structured_content == {"code": "SERVICE_UNAVAILABLE",
                                         "message": UNAVAILABLE.message}


def test_retry_after_reaches_the_model_and_the_client() -> None:
    one = catalogue.failure(UNAVAILABLE, "1")
    assert one.meta == {"retryAfterSeconds": 1}
    assert text_of(one).endswith("log in time\nretry after 1 second")
    assert one.model_dump(by_alias=True)["_meta"] == {"retryAfterSeconds": 1}
    limited = catalogue.failure(c.ErrorBody(code="RATE_LIMITED", message="slow down",
                                            details={"limit": 2}), "12")
    assert text_of(limited) == 'RATE_LIMITED: slow down\n{"limit":2}\nretry after 12 seconds'
    assert limited.structured_content["details"] == {"limit": 2}
    said = catalogue.failure(c.ErrorBody(code="RATE_LIMITED",
                                         message="rate limit exceeded; retry after 3 seconds"), "3")
    assert text_of(said).count("retry after") == 1 and said.meta == {"retryAfterSeconds": 3}


def test_a_retry_after_that_is_not_a_count_of_seconds_is_left_out() -> None:
    for value in ("Wed, 21 Oct 2026 07:28:00 GMT", "-1", "1.5", "²", ""):
        result = catalogue.failure(UNAVAILABLE, value)
        assert result.meta is None and "retry after" not in text_of(result), value


def test_the_stdio_bridge_passes_on_when_to_try_again() -> None:
    """``contextctl mcp``: the typed client gave up (its tries spent); the tool error still
    says when to try again, rounded up to whole seconds."""
    import asyncio

    import mcp_types as types

    from context_service.client import RateLimited
    from context_service.contextctl.mcp_bridge import Bridge

    class Refusing:
        async def call(self, path: str, arguments: object) -> bytes:
            raise RateLimited(429, "RATE_LIMITED", "rate limit exceeded; retry after 2 seconds",
                              None, 1.5)

    bridge = Bridge("http://127.0.0.1:9", "token", {})
    asyncio.run(bridge.client.aclose())
    bridge.client = Refusing()  # type: ignore[assignment]
    result = asyncio.run(bridge.call_tool(
        None,  # type: ignore[arg-type]
        types.CallToolRequestParams(name="list_context_sets", arguments={})))
    assert result.is_error and result.meta == {"retryAfterSeconds": 2}
    assert result.structured_content["code"] == "RATE_LIMITED"
